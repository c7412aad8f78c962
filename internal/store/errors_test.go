package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

// MarkOOM recognises Redis's refusal for want of memory in every form it comes in, and
// nothing else.
func TestMarkOOMMatchesRedisOutOfMemoryRepliesOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		oom  bool
	}{
		{"a command", scriptError("OOM command not allowed when used memory > 'maxmemory'."), true},
		{"a script, Redis 7", scriptError("OOM command not allowed when used memory > 'maxmemory'. script: 1b2c, on @user_script:15."), true},
		{"a script, Redis 6", scriptError("ERR Error running script (call to f_1b2c): @user_script:15: @user_script: 15: -OOM command not allowed when used memory > 'maxmemory'."), true},
		{"one job of a group (exq's own redis.Error)", scriptError("OOM command not allowed when used memory > 'maxmemory'."), true},
		{"wrapped", fmt.Errorf("exq: start: first heartbeat: %w", scriptError("OOM command not allowed when used memory > 'maxmemory'.")), true},
		{"another Redis error", scriptError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"redis.Nil", redis.Nil, false},
		{"not from Redis", errors.New("OOM command not allowed"), false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MarkOOM(tc.err)
			assert.Equal(t, tc.oom, errors.Is(got, ErrOOM))
			if tc.err != nil {
				assert.Equal(t, tc.err.Error(), got.Error(), "Redis's text is kept")
				assert.ErrorIs(t, got, tc.err)
			}
		})
	}
}

func TestEnqueueGroupScriptErrorsAreRedisErrors(t *testing.T) {
	var err error = scriptError("WRONGTYPE Operation against a key holding the wrong kind of value")
	var re redis.Error
	assert.True(t, errors.As(err, &re))
	assert.True(t, strings.HasPrefix(err.Error(), "WRONGTYPE"))
}
