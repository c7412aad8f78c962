package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// jsonKeys are the keys a --json output type prints: its fields' json names, those of the
// structs it embeds included.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" {
			keys = append(keys, jsonKeys(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
}

// Every key that a command's --json prints is in the schema of docs/operating.md ("JSON
// output"), quoted as it is printed or as code: the result fields of exq job and exq workflow show, and
// the whole of exq workflow list, were missing.
func TestEveryJSONKeyIsInTheDocumentedSchema(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "### JSON output")
	if start < 0 {
		t.Fatal(`docs/operating.md has no "### JSON output" section`)
	}
	section := doc[start:]
	if end := strings.Index(section[len("###"):], "\n## "); end >= 0 {
		section = section[:end+len("###")]
	}
	for _, v := range []any{batchJSON{}, workflowJSON{}, workflowJobJSON{}, workflowListJSON{}, place{},
		jobShowJSON{}, jobJSON{}, processJSON{}, busyJSON{}, progressJSON{}, statsJSON{}, queueJSON{},
		periodicJSON{}, runJSON{}, outboxJSON{}, metricsJSON{}, classMetricsJSON{}, metricsBucketJSON{}, keysJSON{}, keyJSON{}} {
		typ := reflect.TypeOf(v)
		for _, k := range jsonKeys(typ) {
			if !strings.Contains(section, `"`+k+`"`) && !strings.Contains(section, "`"+k+"`") {
				t.Errorf("%s prints %q, which docs/operating.md's JSON output section does not name", typ.Name(), k)
			}
		}
	}
	if !strings.Contains(section, "`workflow list`") {
		t.Error("docs/operating.md's JSON output section has no row for workflow list")
	}
}
