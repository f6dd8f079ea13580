package sysinfo

import "testing"

func TestParseNvidiaSMI(t *testing.T) {
	model, count, mem := parseNvidiaSMI("NVIDIA H100 80GB HBM3, 81559\nNVIDIA H100 80GB HBM3, 81559\n")
	if model != "NVIDIA H100 80GB HBM3" || count != 2 || mem != 81559 {
		t.Fatalf("got %q %d %d", model, count, mem)
	}
	if _, c, _ := parseNvidiaSMI(""); c != 0 {
		t.Fatalf("empty output counted %d GPUs", c)
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
