package bundle

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

const mlperfDir = "../../shared/peer-data/mlperf/"

// ent is one archive entry a test builds.
type ent struct {
	name string
	body string
	typ  byte // tar type; 0 means a regular file
	link string
	mode int64
}

func validManifest() string {
	return `{"format": "d5list/v1", "benchmark": "l2-digits-mlp-cpu", "division": "closed", "availability": "available",
 "submitter": "ETH", "system_name": "cpu-box", "framework": "d5list-builtin", "claims": {"time_to_train_s": 12.5}}`
}

func validSystem() string {
	return `{"submitter": "ETH", "division": "closed", "status": "available", "system_name": "cpu-box",
 "number_of_nodes": "1", "host_processors_per_node": "1", "host_processor_model_name": "AMD EPYC",
 "host_processor_core_count": "2", "accelerators_per_node": "0", "accelerator_model_name": "",
 "framework": "d5list-builtin", "operating_system": "Linux"}`
}

const validRecipe = "fixed: {dataset: synthetic-digits, model: mlp, model_kwargs: {hidden: 64}, epochs: 40}\n" +
	"mutable: {batch_size: 32, executor: builtin, optimizer: momentum}\nmetrics: [{name: test_accuracy, acceptable: 0.9}]\n"

const runLog = ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"INTERVAL_START\", \"key\": \"run_start\", \"value\": null, \"metadata\": {}}\n"

// validEntries is a complete, flat bundle.
func validEntries() []ent {
	return []ent{
		{name: "submission.json", body: validManifest()},
		{name: "recipe.yaml", body: validRecipe},
		{name: "system.json", body: validSystem()},
		{name: "results/result_0.txt", body: runLog},
		{name: "results/result_1.txt", body: runLog},
		{name: "code/run.sh", body: "#!/bin/sh\necho hi\n", mode: 0o755},
		{name: "README.md", body: "# my submission\n"},
	}
}

func with(base []ent, extra ...ent) []ent {
	return append(append([]ent{}, base...), extra...)
}

func without(base []ent, name string) []ent {
	var out []ent
	for _, e := range base {
		if e.name != name {
			out = append(out, e)
		}
	}
	return out
}

func tarGz(t testing.TB, ents []ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range ents {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: 0o644}
		if e.mode != 0 {
			h.Mode = e.mode
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			h = &tar.Header{Name: e.name, Typeflag: e.typ, PAXRecords: map[string]string{"comment": "0123abcd"}}
		}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipBytes(t testing.TB, ents []ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range ents {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch e.typ {
		case tar.TypeSymlink:
			h.SetMode(os.ModeSymlink | 0o777)
			e.body = e.link
		case tar.TypeDir:
			h.SetMode(os.ModeDir | 0o755)
		default:
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeFolder writes ents as a submission folder.
func writeFolder(t testing.TB, dir string, ents []ent) {
	t.Helper()
	for _, e := range ents {
		p := filepath.Join(dir, filepath.FromSlash(e.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if e.mode != 0 {
			mode = os.FileMode(e.mode)
		}
		if err := os.WriteFile(p, []byte(e.body), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// listTree returns every path under dir, relative and slash-separated.
func listTree(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
