// Package sysinfo detects what a machine is, for system descriptions
// (`d5list init`) and runner labels, so that both describe the same
// hardware with the same words.
package sysinfo

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Info describes the host.
type Info struct {
	CPUModel   string
	Cores      int
	MemoryGiB  float64
	OS         string
	GPUModel   string
	GPUCount   int
	GPUMemoryM int    // MiB per GPU
	GPUDriver  string // the NVIDIA driver's version
}

// Detect reads the host's description; fields it cannot learn stay empty.
func Detect() Info {
	info := Info{Cores: runtime.NumCPU(), OS: osName(), CPUModel: cpuModel()}
	info.MemoryGiB = memoryGiB()
	info.GPUModel, info.GPUCount, info.GPUMemoryM, info.GPUDriver = gpus()
	return info
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	return runtime.GOARCH
}

func memoryGiB() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseFloat(fields[1], 64)
			return float64(int(kb/1024/1024*10+0.5)) / 10
		}
	}
	return 0
}

func osName() string {
	data, err := os.ReadFile("/etc/os-release")
	if err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				return strings.Trim(v, `"`)
			}
		}
	}
	return runtime.GOOS
}

// gpus asks nvidia-smi, when present, for the GPU model, count, memory
// and driver version. The driver is part of what makes two GPU machines
// the same hardware for timing: a driver update changes kernel launch
// costs and the CUDA versions a machine can run.
func gpus() (model string, count, memMiB int, driver string) {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return "", 0, 0, ""
	}
	out, err := exec.Command(path, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return "", 0, 0, ""
	}
	return parseNvidiaSMI(string(out))
}

// parseNvidiaSMI reads "name, memory.total, driver_version" lines, one per
// GPU; the first GPU describes them all.
func parseNvidiaSMI(out string) (model string, count, memMiB int, driver string) {
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 2 {
			continue
		}
		count++
		if model == "" {
			model = strings.TrimSpace(f[0])
			memMiB, _ = strconv.Atoi(strings.TrimSpace(f[1]))
			if len(f) > 2 {
				driver = strings.TrimSpace(f[2])
			}
		}
	}
	return model, count, memMiB, driver
}

// Labels are the runner labels this host advertises.
func (i Info) Labels() map[string]string {
	l := map[string]string{
		"cpu_model":  i.CPUModel,
		"cpu_cores":  strconv.Itoa(i.Cores),
		"memory_gib": strconv.FormatFloat(i.MemoryGiB, 'f', -1, 64),
		"os":         i.OS,
	}
	if i.GPUCount > 0 {
		l["accelerator_model"] = i.GPUModel
		l["accelerator_count"] = strconv.Itoa(i.GPUCount)
		l["accelerator_memory_mib"] = strconv.Itoa(i.GPUMemoryM)
		if i.GPUDriver != "" {
			l["accelerator_driver"] = i.GPUDriver
		}
	}
	return l
}
