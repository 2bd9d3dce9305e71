package queue

import (
	"reflect"
	"testing"
)

// The Store's own methods are the message's life; everything else is
// reached through an accessor (Admin, Events, History, Suppressions, TLS,
// Quarantine, ReturnPath, Owner, Counters, Egress), so that what delivery
// depends on stays small enough to read. A method added to the Store
// instead of to its accessor shows up here: 27 of the life's own and the
// 10 accessors.
func TestStoreSurfaceStaysSmall(t *testing.T) {
	const most = 37
	st := reflect.TypeFor[*Store]()
	if n := st.NumMethod(); n > most {
		var names []string
		for i := range n {
			names = append(names, st.Method(i).Name)
		}
		t.Errorf("*Store has %d exported methods, want at most %d: %v", n, most, names)
	}
	for _, acc := range []string{"Admin", "Events", "History", "Suppressions", "TLS", "Quarantine", "ReturnPath", "Owner", "Counters", "Egress"} {
		m, ok := st.MethodByName(acc)
		if !ok {
			t.Errorf("*Store has no accessor %s", acc)
			continue
		}
		if r := m.Type.Out(0); r.Kind() != reflect.Struct || r.NumField() != 1 || r.Field(0).Type != st {
			t.Errorf("%s() returns %v, want a value type holding only the *Store", acc, r)
		}
	}
}
