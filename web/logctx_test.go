package web

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestLogLinesCarryTheRequestID(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(WithRequestIDs(slog.NewJSONHandler(&buf, nil))).With("component", "portal")
	ctx := context.WithValue(context.Background(), requestIDKey{}, "req-42")
	log.InfoContext(ctx, "inside a request")
	log.InfoContext(ctx, "explicit", "request_id", "req-42")
	log.Info("outside any request")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"req-42", "req-42", ""}
	if len(lines) != len(want) {
		t.Fatalf("%d log lines: %s", len(lines), buf.String())
	}
	for i, line := range lines {
		if n := strings.Count(line, `"request_id"`); (want[i] != "") != (n == 1) || n > 1 {
			t.Errorf("line %d has request_id %d times: %s", i, n, line)
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if got, _ := rec["request_id"].(string); got != want[i] || rec["component"] != "portal" {
			t.Errorf("line %d: request_id %q component %v, want %q portal", i, got, rec["component"], want[i])
		}
	}
}
