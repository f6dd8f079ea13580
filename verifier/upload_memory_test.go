package verifier

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/catalog"
)

// TestUploadMemoryStudy measures the heap an upload check (bundle.Read and
// Check, what the portal does before it stores anything) needs for uploads
// built to cost the most within the default limits. Run with
// D5LIST_MEMORY_STUDY=1; BENCHMARKS.md ("Upload check memory") has the
// figures. It asserts the target of issue 19, at most 512 MB above idle,
// and that no upload takes more than bundle.Limits.CheckMemory, by which
// the portal admits uploads to be checked at once.
func TestUploadMemoryStudy(t *testing.T) {
	if os.Getenv("D5LIST_MEMORY_STUDY") == "" {
		t.Skip("upload memory study: set D5LIST_MEMORY_STUDY=1 (builds uploads at the limits)")
	}
	benches, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	bench, err := catalog.Lookup(benches, "l2-digits-mlp-cpu")
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]string{}
	for _, name := range []string{"submission.json", "recipe.json"} {
		data, err := os.ReadFile(filepath.Join("testdata/check/pass", name))
		if err != nil {
			t.Fatal(err)
		}
		base[name] = string(data)
	}
	base["system.json"] = `{"submitter": "Memory Lab", "division": "closed", "status": "available", "system_name": "box",
 "number_of_nodes": "1", "host_processors_per_node": "1", "host_processor_model_name": "AMD EPYC",
 "host_processor_core_count": "2", "accelerators_per_node": "0", "accelerator_model_name": "",
 "framework": "d5list-builtin", "operating_system": "Linux"}`
	lim := bundle.DefaultLimits()
	perLog := lim.MaxHeldBytes/5 - 64<<10
	mllogLine := func(ms int, key, value string) string {
		return fmt.Sprintf(":::MLLOG {\"namespace\": \"\", \"time_ms\": %d, \"event_type\": \"POINT_IN_TIME\", \"key\": %q, \"value\": %s, \"metadata\": {\"epoch_num\": 1}}\n", ms, key, value)
	}
	fill := func(line func(i int) string) string {
		var b strings.Builder
		b.WriteString(mllogLine(0, "run_start", "null"))
		for i := 1; ; i++ {
			l := line(i)
			if int64(b.Len()+len(l)) > perLog {
				break
			}
			b.WriteString(l)
		}
		b.WriteString(mllogLine(1<<30, "run_stop", "null"))
		return b.String()
	}
	// Random digits, so that the archive stays under the compression ratio
	// that refuses a bomb, as a hostile upload would.
	rng := rand.New(rand.NewPCG(1, 2))
	number := func() string { return strconv.FormatFloat(rng.Float64(), 'f', 6, 64) }
	array := func() string {
		var b strings.Builder
		b.WriteByte('[')
		for i := range 100_000 { // 900 kB: under the parser's 1 MiB line limit
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(number())
		}
		return b.String() + "]"
	}
	recipeOf := func(size int) func() string {
		return func() string {
			var b strings.Builder
			b.WriteString("FIXED = {'model': 'mlp', 'table': [")
			for b.Len() < size-100 {
				b.WriteString("(" + number() + ", [" + number() + "]), ")
			}
			return b.String() + "]}\nMUTABLE = {}\nMETRICS = [(d5.TestAccuracy(), 0.9)]\n"
		}
	}
	smallLog := func() string { return mllogLine(0, "run_start", "null") + mllogLine(1000, "run_stop", "null") }
	// Metadata of random short keys with numbers that do not fit a byte:
	// the most decoded map per byte of text.
	metaLine := func(ms, size int) string {
		var b strings.Builder
		b.WriteString(fmt.Sprintf(":::MLLOG {\"namespace\": \"\", \"time_ms\": %d, \"event_type\": \"POINT_IN_TIME\", \"key\": \"eval_accuracy\", \"value\": 0.5, \"metadata\": {\"epoch_num\": 1", ms))
		for b.Len() < size-20 {
			b.WriteString(fmt.Sprintf(", \"%c%c%c%d\": %d", 'a'+rng.IntN(26), 'a'+rng.IntN(26), 'a'+rng.IntN(26), rng.IntN(100), 256+rng.IntN(1<<20)))
		}
		return b.String() + "}}\n"
	}
	cases := []struct {
		name   string
		logs   func() string
		recipe func() string
	}{
		{"long numeric arrays (1 MB a line)", func() string { return fill(func(i int) string { return mllogLine(i, "train_loss", array()) }) }, nil},
		{"short lines", func() string { return fill(func(i int) string { return mllogLine(i, "eval_accuracy", number()) }) }, nil},
		{"lines of 600 B random metadata", func() string { return fill(func(i int) string { return metaLine(i, 600) }) }, nil},
		{"lines of 4 kB random metadata", func() string { return fill(func(i int) string { return metaLine(i, 4000) }) }, nil},
		{"a recipe.py at the recipe limit", smallLog, recipeOf(int(lim.MaxRecipeBytes))},
		{"a recipe.py of 4 MB", smallLog, recipeOf(4 << 20)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := c.logs()
			files := map[string]string{}
			for k, v := range base {
				files[k] = v
			}
			for i := range 5 {
				files[fmt.Sprintf("results/result_%d.txt", i)] = log
			}
			if c.recipe != nil {
				delete(files, "recipe.json")
				files["recipe.py"] = c.recipe()
			}
			archive, raw := tarGzFiles(t, files)
			log, files = "", nil
			measureUpload(t, archive, raw, func() error {
				b, err := bundle.Read(bytes.NewReader(archive), lim)
				if err == nil {
					Check(b, bench)
				}
				return err
			})
		})
	}
	// An MLPerf folder for /api/v1/mlperf/check: the folder goes to disk,
	// then each result file streams through the parser.
	for _, c := range []struct {
		name string
		line func(i int) string
	}{
		{"MLPerf folder of short lines", func(i int) string { return mllogLine(i, "eval_accuracy", number()) }},
		{"MLPerf folder of 4 kB random metadata", func(i int) string { return metaLine(i, 4000) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{}
			for i := range 10 {
				var b strings.Builder
				b.WriteString(mllogLine(0, "submission_benchmark", `"ssd"`))
				for j := 1; b.Len() < 24<<20; j++ {
					b.WriteString(c.line(j))
				}
				files[fmt.Sprintf("v4.1-mem-ssd/result_%d.txt", i)] = b.String()
			}
			archive, raw := tarGzFiles(t, files)
			files = nil
			dir := t.TempDir()
			measureUpload(t, archive, raw, func() error {
				if _, err := bundle.ExtractMLPerfFolder(bytes.NewReader(archive), dir, lim); err != nil {
					return err
				}
				_, err := CheckMLPerfRound(dir, "4.1")
				return err
			})
		})
	}
}

// measureUpload runs check and reports its peak heap and peak resident
// memory above what the process held before, against the 512 MB target
// and the memory the portal admits the upload by (Limits.CheckMemory).
func measureUpload(t *testing.T, archive []byte, raw int, check func() error) {
	t.Helper()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	heap := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	debug.FreeOSMemory()
	idle, idleRSS := heap(), residentKB(t, "VmRSS")
	// Writing 5 to clear_refs resets VmHWM, the peak resident set, to now.
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("peak RSS not reset (%v): it includes earlier cases", err)
	}
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				if h := heap(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	start := time.Now()
	cpu0 := cpuTime()
	err := check()
	cpu := cpuTime() - cpu0
	close(done)
	if h := heap(); h > peak.Load() {
		peak.Store(h)
	}
	mb := func(b float64) float64 { return b / (1 << 20) }
	heapAbove := mb(float64(peak.Load() - min(peak.Load(), idle)))
	rssAbove := float64(residentKB(t, "VmHWM")-min(residentKB(t, "VmHWM"), idleRSS)) / 1024
	t.Logf("MEMORY %s | upload %.1f MB compressed, %.1f MB uncompressed | check: %v | above idle: peak heap %.0f MB, peak RSS %.0f MB (%.1fx the uncompressed upload) | %.1f s wall, %.1f s CPU",
		t.Name(), mb(float64(len(archive))), mb(float64(raw)), err, heapAbove, rssAbove, rssAbove/max(mb(float64(raw)), 1), time.Since(start).Seconds(), cpu.Seconds())
	if rssAbove > 512 {
		t.Errorf("peak RSS %.0f MB above idle, over the 512 MB target", rssAbove)
	}
	if rssAbove > 4*max(mb(float64(raw)), 16) {
		t.Errorf("peak RSS %.0f MB above idle, over 4x the uncompressed upload", rssAbove)
	}
	if admitted := mb(float64(bundle.DefaultLimits().CheckMemory(int64(len(archive))))); max(heapAbove, rssAbove) > admitted {
		t.Errorf("peak heap %.0f MB and RSS %.0f MB above idle, over the %.0f MB the portal admits the upload by", heapAbove, rssAbove, admitted)
	}
}

// residentKB reads a VmRSS or VmHWM line of /proc/self/status.
func residentKB(t *testing.T, field string) uint64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// tarGzFiles archives files and returns the archive and the files' total size.
func tarGzFiles(t *testing.T, files map[string]string) ([]byte, int) {
	t.Helper()
	raw := 0
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		raw += len(body)
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), raw
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
