package workloads

import (
	"os"
	"testing"
)

// TestMain lets the data-parallel tests re-execute this test binary as their
// worker processes, and as a coordinator to kill (coordinatorEnv).
func TestMain(m *testing.M) {
	ServeWorkerIfAsked()
	if os.Getenv(coordinatorEnv) != "" {
		runTestCoordinator()
		return
	}
	os.Exit(m.Run())
}
