package exq

import (
	"encoding/json"
	"testing"
)

// Benchmarks of Job.Bind. The destinations live outside the loop, as a worker's locals that
// escape to the heap once would; what is measured is Bind's own cost and allocations.

func BenchmarkBindTwoInts(b *testing.B) {
	j := &Job{Class: "W", Args: json.RawMessage(`[12345,67890]`)}
	var x, y int
	b.ReportAllocs()
	for b.Loop() {
		if err := j.Bind(&x, &y); err != nil {
			b.Fatal(err)
		}
	}
	if x != 12345 || y != 67890 {
		b.Fatal(x, y)
	}
}

func BenchmarkBindMixedScalars(b *testing.B) {
	j := &Job{Class: "W", Args: json.RawMessage(`[42, "welcome", true, 2.5, 9007199254740993]`)}
	var (
		id   int64
		tmpl string
		ok   bool
		f    float64
		u    uint64
	)
	b.ReportAllocs()
	for b.Loop() {
		if err := j.Bind(&id, &tmpl, &ok, &f, &u); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBindStringSlice(b *testing.B) {
	j := &Job{Class: "W", Args: json.RawMessage(`[7,["alpha","beta","gamma"]]`)}
	var (
		id   int
		tags []string
	)
	b.ReportAllocs()
	for b.Loop() {
		tags = tags[:0]
		if err := j.Bind(&id, &tags); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBindStruct(b *testing.B) {
	type payload struct {
		UserID   int    `json:"user_id"`
		Template string `json:"template"`
	}
	j := &Job{Class: "W", Args: json.RawMessage(`[{"user_id":42,"template":"welcome"}]`)}
	var p payload
	b.ReportAllocs()
	for b.Loop() {
		if err := j.Bind(&p); err != nil {
			b.Fatal(err)
		}
	}
}
