package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRunnerLabels(t *testing.T) {
	datasets := t.TempDir()
	for _, d := range []string{"cifar10", "imagenet", ".cache"} {
		if err := os.Mkdir(filepath.Join(datasets, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(datasets, "README"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	detected := map[string]string{"cpu_model": "Xeon", "cpu_cores": "16", "os": ""}
	cases := []struct {
		name, datasets, overrides string
		want                      map[string]string
		err                       string
	}{
		{"detected only", "", "", map[string]string{"cpu_model": "Xeon", "cpu_cores": "16"}, ""},
		{"datasets are folders", datasets, "", map[string]string{"cpu_model": "Xeon", "cpu_cores": "16",
			"dataset.cifar10": "yes", "dataset.imagenet": "yes"}, ""},
		{"overrides win", "", "cpu_cores=8, accelerator_model = H100", map[string]string{"cpu_model": "Xeon",
			"cpu_cores": "8", "accelerator_model": "H100"}, ""},
		{"bad item named", "", "a=1,oops", nil, `item 2 "oops"`},
		{"missing folder", filepath.Join(datasets, "nope"), "", nil, "--datasets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := runnerLabels(detected, c.datasets, c.overrides)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("labels %v (%v), want %v", got, err, c.want)
			}
		})
	}
}

func TestRunnerRefusesBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--token", "d5r_x"}, "--server is required"},
		{[]string{"--server", "http://127.0.0.1:1"}, "a token is required in D5LIST_RUNNER_TOKEN or --token-file"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", "d5_user"}, "not a runner token"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--concurrency", "0"}, "--concurrency"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--executor", "docker"}, `--executor "docker"`},
		{[]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--executor", "slurm"}, "needs --work"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--executor", "slurm", "--work", os.TempDir()}, "--allow-unbounded"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--job-memory", "-1"}, "--job-memory"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--job-processes", "0"}, "--job-processes positive"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--id", "a b"}, "--id"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", "d5r_x", "--id", "local"}, "in-process runners"},
	}
	for _, c := range cases {
		err := run(context.Background(), append([]string{"runner"}, c.args...), os.Stdout, os.Stderr)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("runner %v: %v, want an error naming %q", c.args, err, c.want)
		}
	}
}

// A runner shares its GPUs equally among its concurrent jobs: the devices
// its CUDA_VISIBLE_DEVICES names, or all it found (issue 14).
func TestShareGPUs(t *testing.T) {
	for _, tt := range []struct {
		count       int
		visible     string
		concurrency int
		devices     string
		perJob      int
	}{
		{0, "", 2, "", 0},
		{8, "", 1, "0,1,2,3,4,5,6,7", 8},
		{8, "", 2, "0,1,2,3,4,5,6,7", 4},
		{8, "", 3, "0,1,2,3,4,5,6,7", 2},
		{8, "4, 5,6,7", 2, "4,5,6,7", 2},
		{1, "", 4, "0", 1},
	} {
		devices, perJob := shareGPUs(tt.count, tt.visible, tt.concurrency)
		if strings.Join(devices, ",") != tt.devices || perJob != tt.perJob {
			t.Errorf("shareGPUs(%d, %q, %d) = %v, %d; want %s, %d", tt.count, tt.visible, tt.concurrency, devices, perJob, tt.devices, tt.perJob)
		}
	}
}
