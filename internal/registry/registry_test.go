package registry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A class is registered once, and a class with "/…" after it finds the worker of its base
// class, as Exq's "Mod/perform" does.
func TestAClassIsRegisteredOnceAndLookedUpByItsBaseClass(t *testing.T) {
	r := New(map[string]*int{"A": new(int)}, 0)
	assert.False(t, r.Add("A", new(int)), "A has a worker")
	assert.True(t, r.Add("B", new(int)))
	for _, tc := range []struct {
		class string
		found bool
	}{{"A", true}, {"B", true}, {"A/perform", true}, {"C", false}, {"/A", false}} {
		_, ok := r.Lookup(tc.class)
		assert.Equal(t, tc.found, ok, tc.class)
	}
}

// Await returns a worker registered while it waits; it gives up (the zero worker) when
// registration ends, stop is closed or its wait is over.
func TestAwaitReturnsALateWorkerOrGivesUp(t *testing.T) {
	w := new(int)
	for _, tc := range []struct {
		name  string
		grace time.Duration
		wait  time.Duration
		act   func(r *Registry[*int], stop chan struct{})
		want  *int
	}{
		{"registered while it waits", time.Hour, time.Hour, func(r *Registry[*int], _ chan struct{}) { r.Add("Late", w) }, w},
		{"registration ends", time.Hour, time.Hour, func(r *Registry[*int], _ chan struct{}) { r.Done() }, nil},
		{"stop is closed", time.Hour, time.Hour, func(_ *Registry[*int], stop chan struct{}) { close(stop) }, nil},
		{"the wait is over", time.Hour, time.Millisecond, func(*Registry[*int], chan struct{}) {}, nil},
		{"registration was over from the start", 0, time.Hour, func(*Registry[*int], chan struct{}) {}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New(map[string]*int{}, tc.grace)
			defer r.Done()
			stop := make(chan struct{})
			got := make(chan *int, 1)
			go func() { got <- r.Await("Late/perform", tc.wait, stop) }()
			tc.act(r, stop)
			assert.Equal(t, tc.want, <-got)
		})
	}
}

// A grace so short that its timer fires while New is still setting it ends registration all
// the same, with no race between New and the timer's Done (go test -race).
func TestATimerThatFiresAtOnceEndsRegistration(t *testing.T) {
	for i := 0; i < 2000; i++ {
		r := New(map[string]int{}, time.Nanosecond)
		for r.Registering() {
			time.Sleep(time.Microsecond)
		}
	}
}
