package workloads

import (
	"os"
	"testing"
)

// TestMain lets the data-parallel tests re-execute this test binary as
// their worker processes.
func TestMain(m *testing.M) {
	ServeWorkerIfAsked()
	os.Exit(m.Run())
}
