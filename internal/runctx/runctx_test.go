package runctx

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type key struct{}

var errWhy = errors.New("why")

// Whatever order waiting, deriving and cancelling come in, the context behaves as
// context.WithCancelCause(context.Background()) with one value would.
func TestCtxBehavesAsACancelCauseContextInEveryOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		waitFirst   bool // Done before Cancel
		derive      bool // a WithTimeout child made before Cancel
		cause       error
		wantCause   error
		wantErr     error
		wantDoneNow bool
	}{
		{"never waited, cancelled", false, false, errWhy, errWhy, context.Canceled, true},
		{"waited, then cancelled", true, false, errWhy, errWhy, context.Canceled, true},
		{"child, then cancelled", false, true, errWhy, errWhy, context.Canceled, true},
		{"cancelled without a cause", false, false, nil, context.Canceled, context.Canceled, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c Ctx
			c.Set(key{}, 42)
			assert.Equal(t, 42, c.Value(key{}))
			assert.Nil(t, c.Value("other"))
			assert.NoError(t, c.Err())
			assert.NoError(t, context.Cause(&c))
			if tc.waitFirst {
				select {
				case <-c.Done():
					t.Fatal("done before Cancel")
				default:
				}
			}
			var child context.Context
			if tc.derive {
				var cancel context.CancelFunc
				child, cancel = context.WithTimeout(&c, time.Hour)
				defer cancel()
				assert.Equal(t, 42, child.Value(key{}), "a child sees the value")
			}
			c.Cancel(tc.cause)
			c.Cancel(errors.New("a later cause")) // the first stays
			assert.ErrorIs(t, c.Err(), tc.wantErr)
			assert.ErrorIs(t, context.Cause(&c), tc.wantCause)
			assert.Equal(t, tc.cause, c.Cause())
			select {
			case <-c.Done():
			case <-time.After(time.Second):
				t.Fatal("not done after Cancel")
			}
			if child != nil {
				select {
				case <-child.Done():
				case <-time.After(time.Second):
					t.Fatal("a child is not done after Cancel")
				}
				assert.ErrorIs(t, context.Cause(child), tc.wantCause)
			}
			assert.Equal(t, 42, c.Value(key{}), "the value outlives the cancel")
		})
	}
}

// context.AfterFunc and a child made after the cancel see it at once; Done, Value and Cancel
// may be called from many goroutines at once (run with -race).
func TestCtxIsSafeForConcurrentUseAndLateChildren(t *testing.T) {
	t.Parallel()
	var c Ctx
	ran := make(chan struct{})
	stop := context.AfterFunc(&c, func() { close(ran) })
	defer stop()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 4 {
				c.Cancel(errWhy)
			}
			<-c.Done()
			_ = c.Value(key{})
		}()
	}
	wg.Wait()
	<-ran
	late, cancel := context.WithCancel(&c)
	defer cancel()
	assert.ErrorIs(t, context.Cause(late), errWhy, "a child made after the cancel is cancelled with its cause")
}
