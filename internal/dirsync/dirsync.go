package dirsync

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Sync fsyncs directory dir, which makes the entries created, renamed or
// removed in it durable.
func Sync(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Parent syncs the directory that holds path: call it after path was
// created or renamed into place.
func Parent(path string) error { return Sync(filepath.Dir(path)) }

// MkdirAll is os.MkdirAll, but it syncs the parent of each directory it
// creates.
func MkdirAll(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
				return nil
			}
		}
		return err
	}
	return Sync(parent)
}
