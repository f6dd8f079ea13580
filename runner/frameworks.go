package runner

import (
	"context"
	"os/exec"
	"strings"
	"time"
)

// SandboxPython is the interpreter a sandboxed entrypoint finds first: the
// sandbox binds /usr read-only and its PATH starts with /usr/bin.
const SandboxPython = "/usr/bin/python3"

// frameworkProbe prints one "label=version" line per framework that
// SandboxPython imports; a missing one prints nothing.
const frameworkProbe = `
import importlib
for label, module in (("framework.torch", "torch"), ("framework.sklearn", "sklearn"), ("framework.numpy", "numpy")):
    try:
        print(label + "=" + importlib.import_module(module).__version__)
    except Exception:
        pass
`

// FrameworkLabels are the runner labels of the frameworks a sandboxed
// entrypoint can import (for example framework.torch=1.13.1), so that a
// benchmark that requires one is leased only to a runner that has it.
// Without python3 it is empty.
func FrameworkLabels(ctx context.Context) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, SandboxPython, "-c", frameworkProbe).Output()
	labels := map[string]string{}
	if err != nil {
		return labels
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && strings.HasPrefix(k, "framework.") && v != "" {
			labels[k] = v
		}
	}
	return labels
}
