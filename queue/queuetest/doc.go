// Package queuetest gives tests a real queue.Store, as net/http/httptest
// gives them a real server: a bbolt file in t.TempDir() on a fake clock,
// closed when the test ends, and the helpers to fill it and read it back.
//
// It is for the tests of queue's importers (queue/repair, delivery,
// returnpath, internal/...). queue's own tests cannot import it (it imports
// queue) and keep their copies in queue/helpers_test.go.
package queuetest
