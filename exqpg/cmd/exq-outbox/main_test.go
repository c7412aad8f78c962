package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBadCommandLinesExitTwoAndSayWhy(t *testing.T) {
	env := func(string) string { return "" }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: exq-outbox COMMAND"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"relay"}, "no Postgres URL: pass --pg-url or set $EXQPG_URL"},
		{[]string{"relay", "--pg-url", "postgres://x", "extra"}, `unexpected argument "extra"`},
		{[]string{"relay", "--batch-size", "many"}, `invalid value "many"`},
		{[]string{"migrate", "--pg-url", "postgres://127.0.0.1:1/x", "--schema", "Bad"}, "invalid schema name"},
		{[]string{"status", "--pg-url", "::not a url"}, "--pg-url"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, env, &out, &errOut)
		assert.Equal(t, 2, code, "%v: %s", tc.args, errOut.String())
		assert.Contains(t, errOut.String(), tc.want, "%v", tc.args)
	}
}

func TestHelpExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"help"}, func(string) string { return "" }, &out, &errOut))
	assert.Contains(t, out.String(), "relay")
	assert.Equal(t, 0, run(context.Background(), []string{"relay", "-h"}, func(string) string { return "" }, &out, &errOut))
	assert.Contains(t, errOut.String(), "-batch-size")
}
