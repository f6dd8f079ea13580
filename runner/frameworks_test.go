package runner

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

func TestFrameworkLabels(t *testing.T) {
	out, err := exec.Command(SandboxPython, "-c", "import torch; print(torch.__version__)").Output()
	if err != nil {
		t.Skipf("%s has no torch (apt-get install python3-torch): nothing to detect", SandboxPython)
	}
	labels := FrameworkLabels(context.Background())
	if want := strings.TrimSpace(string(out)); labels["framework.torch"] != want {
		t.Fatalf("labels %v, want framework.torch=%s", labels, want)
	}
}
