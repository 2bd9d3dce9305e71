package queue

import (
	bolt "go.etcd.io/bbolt"
)

// The webhooks' cursors into the event log (Events): each webhook
// resumes after a restart from the last event it acknowledged.

// bucketCursors keeps each webhook's durable cursor: name -> event ID.
var bucketCursors = []byte("webhook_cursors")

// Cursor is the ID of the last event webhook name has acknowledged
// ("" for none yet).
func (ev Events) Cursor(name string) (string, error) {
	s := ev.s
	var id string
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketCursors); b != nil {
			id = string(b.Get([]byte(name)))
		}
		return nil
	})
	return id, err
}

// SetCursor durably moves webhook name's cursor to event id.
func (ev Events) SetCursor(name, id string) error {
	s := ev.s
	return s.submit(func(w *writeTx) error {
		b, err := w.bucket(bucketCursors)
		if err != nil {
			return err
		}
		return b.Put([]byte(name), []byte(id))
	})
}
