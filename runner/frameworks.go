package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	d5list "github.com/deep500/d5list"
)

// SandboxPython is the interpreter a sandboxed entrypoint finds first: the
// sandbox binds /usr read-only and its PATH starts with /usr/bin.
const SandboxPython = "/usr/bin/python3"

// environmentProbe prints, as one JSON object, the versions of what a
// Python entrypoint computes with: Python, the frameworks it can import,
// the CUDA and cuDNN torch was built with, and the BLAS in use as
// threadpoolctl sees it loaded (its kernel architecture, which
// OPENBLAS_CORETYPE changes, and threading), else as numpy or torch were
// built. A module that is missing or fails is left out, never an error.
// Keys are runner labels (framework.NAME), so that a claim's environment
// and its re-run's compare like for like.
const environmentProbe = `
import json, platform
out = {"framework.python": platform.python_version()}
def version(label, name):
    try:
        m = __import__(name)
        out[label] = str(m.__version__)
        return m
    except Exception:
        return None
torch = version("framework.torch", "torch")
np = version("framework.numpy", "numpy")
version("framework.sklearn", "sklearn")
if torch is not None:
    try:
        if torch.version.cuda:
            out["framework.cuda"] = str(torch.version.cuda)
        if torch.backends.cudnn.is_available():
            out["framework.cudnn"] = str(torch.backends.cudnn.version())
    except Exception:
        pass
blas = []
try:
    import threadpoolctl
    for lib in threadpoolctl.threadpool_info():
        if lib.get("user_api") == "blas":
            blas.append(" ".join(str(lib[k]) for k in ("internal_api", "version", "architecture", "threading_layer") if lib.get(k)))
except Exception:
    pass
if not blas and np is not None:
    try:
        b = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas.append(" ".join(str(b[k]) for k in ("name", "version") if b.get(k)))
    except Exception:
        pass
if not blas and torch is not None:
    try:
        for part in torch.__config__.show().replace(",", "\n").split("\n"):
            k, _, v = part.strip().partition("=")
            if k == "BLAS_INFO":
                blas.append("torch " + v)
    except Exception:
        pass
if blas:
    out["framework.blas"] = "; ".join(sorted(set(blas)))
print(json.dumps(out))
`

// The bounds of a recorded environment: the probe's output may come from a
// competitor's image, and the record travels with every run's result.
const (
	maxProbeOutput   = 64 << 10
	maxRecordedKeys  = 64
	maxRecordedValue = 200 // bytes, as a claim's environment labels
	probeTimeout     = time.Minute
)

// parseEnvironmentProbe reads environmentProbe's JSON object from the
// probe's output lines (the last line that is one): its framework.* keys,
// with string or number values, cut to the bounds.
func parseEnvironmentProbe(lines []string) map[string]string {
	for i := len(lines) - 1; i >= 0; i-- {
		var raw map[string]any
		if json.Unmarshal([]byte(strings.TrimSpace(lines[i])), &raw) != nil {
			continue
		}
		out := map[string]string{}
		for k, v := range raw {
			if !strings.HasPrefix(k, "framework.") || len(k) > 64 || len(out) >= maxRecordedKeys {
				continue
			}
			switch v := v.(type) {
			case string:
				if v != "" {
					out[k] = cut(v, maxRecordedValue)
				}
			case float64:
				// 1e300 spelt out is 301 digits: bounded as a string is.
				out[k] = cut(strconv.FormatFloat(v, 'f', -1, 64), maxRecordedValue)
			}
		}
		return out
	}
	return nil
}

// probeFlag starts the probe's Python isolated: neither the folder it
// starts in (the bundle), nor a user site folder a run could have written
// under $HOME, nor PYTHON* variables take part. What it reports is the
// interpreter's own.
const probeFlag = "-I"

// cut shortens s to at most n bytes, marking the cut, and never inside a
// UTF-8 sequence.
func cut(s string, n int) string {
	// Invalid UTF-8 becomes U+FFFD first, as JSON would make it, so that
	// the cut string stays within n bytes once sent.
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	c := n - len("…")
	for c > 0 && !utf8.RuneStart(s[c]) {
		c--
	}
	return s[:c] + "…"
}

// envRecord is what a run was told, as env.NAME labels: every variable the
// runner set in its sandbox (its own and the image's), bounded. The record
// is published, so the value of a variable whose name says it may hold a
// secret (an image's HF_TOKEN) is replaced by d5list.HiddenValue; the
// runner's own token and lease secrets are never in a sandbox (runEnv).
func envRecord(env []string) map[string]string {
	rec := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if len(rec) >= maxRecordedKeys {
			break
		}
		if d5list.SecretName(k) {
			v = d5list.HiddenValue
		}
		rec["env."+cut(k, 64)] = cut(v, maxRecordedValue)
	}
	return rec
}

// FrameworkLabels are the runner labels of what a sandboxed entrypoint
// computes with (framework.torch=1.13.1, framework.blas=..., as
// environmentProbe reports them from the python3 a run finds first: in
// extraPath, the folders put before the sandbox's PATH, else
// SandboxPython), so that a benchmark that requires a framework is leased
// only to a runner that has it, and a claim records what it ran with. The
// probe runs with the sandbox's minimal environment, not the caller's: a
// variable such as OPENBLAS_CORETYPE changes what it reports. Without
// python3 it is empty.
func FrameworkLabels(ctx context.Context, extraPath ...string) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	python, path := SandboxPython, sandboxPath
	for _, d := range extraPath {
		if fi, err := os.Stat(filepath.Join(d, "python3")); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			python = filepath.Join(d, "python3")
			break
		}
	}
	if len(extraPath) > 0 {
		path = "PATH=" + strings.Join(extraPath, ":") + ":" + strings.TrimPrefix(sandboxPath, "PATH=")
	}
	cmd := exec.CommandContext(ctx, python, probeFlag, "-c", environmentProbe)
	cmd.Env = []string{path, sandboxLang}
	out, err := cmd.Output()
	labels := parseEnvironmentProbe(strings.Split(string(out), "\n"))
	if err != nil || labels == nil {
		return map[string]string{}
	}
	return labels
}
