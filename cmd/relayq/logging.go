package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/relayq/relayq/config"
)

// newLogger is the relay's logger: text or JSON lines on logOut at the
// configured level. Every line has one msg, one time and one level: an
// attribute under one of those names (a library's "msg") is renamed, for
// JSON log pipelines refuse an object with a key twice.
func newLogger(c config.Log, logOut io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	o := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(logOut, o)
	if c.Format == "json" {
		h = slog.NewJSONHandler(logOut, o)
	}
	return slog.New(uniqueKeys{h})
}

// reservedKeys are the keys slog writes itself, and what an attribute so
// named is renamed to.
var reservedKeys = map[string]string{
	slog.MessageKey: "detail",
	slog.TimeKey:    "attr_time",
	slog.LevelKey:   "attr_level",
	slog.SourceKey:  "attr_source",
}

// uniqueKeys renames top-level attributes that would repeat a built-in key.
type uniqueKeys struct{ slog.Handler }

func (u uniqueKeys) Handle(ctx context.Context, r slog.Record) error {
	clash := false
	r.Attrs(func(a slog.Attr) bool {
		_, clash = reservedKeys[a.Key]
		return !clash
	})
	if !clash {
		return u.Handler.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(rename(a))
		return true
	})
	return u.Handler.Handle(ctx, out)
}

func (u uniqueKeys) WithAttrs(as []slog.Attr) slog.Handler {
	renamed := make([]slog.Attr, len(as))
	for i, a := range as {
		renamed[i] = rename(a)
	}
	return uniqueKeys{u.Handler.WithAttrs(renamed)}
}

// WithGroup needs no renaming below it: a group's keys are qualified.
func (u uniqueKeys) WithGroup(name string) slog.Handler { return uniqueKeys{u.Handler.WithGroup(name)} }

func rename(a slog.Attr) slog.Attr {
	if k, ok := reservedKeys[a.Key]; ok {
		a.Key = k
	}
	return a
}
