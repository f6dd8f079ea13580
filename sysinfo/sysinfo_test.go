package sysinfo

import "testing"

func TestParseNvidiaSMI(t *testing.T) {
	model, count, mem, driver := parseNvidiaSMI("NVIDIA H100 80GB HBM3, 81559, 550.54.15\nNVIDIA H100 80GB HBM3, 81559, 550.54.15\n")
	if model != "NVIDIA H100 80GB HBM3" || count != 2 || mem != 81559 || driver != "550.54.15" {
		t.Fatalf("got %q %d %d %q", model, count, mem, driver)
	}
	if _, c, _, _ := parseNvidiaSMI(""); c != 0 {
		t.Fatalf("empty output counted %d GPUs", c)
	}
	l := Info{GPUModel: model, GPUCount: count, GPUMemoryM: mem, GPUDriver: driver}.Labels()
	if l["accelerator_model"] != model || l["accelerator_count"] != "2" || l["accelerator_driver"] != "550.54.15" {
		t.Fatalf("labels %v lack the GPU model, count or driver", l)
	}
}

func TestDetectDescribesThisHost(t *testing.T) {
	i := Detect()
	if i.Cores < 1 || i.CPUModel == "" || i.OS == "" {
		t.Fatalf("Detect() = %+v", i)
	}
	l := i.Labels()
	if l["cpu_model"] != i.CPUModel {
		t.Fatalf("labels %v do not carry the CPU model %q", l, i.CPUModel)
	}
}
