package d5list

// Recipe is a Deep500 recipe: fixed and mutable definitions plus the metrics
// that are acceptable. Values are plain JSON-like data (string, float64,
// int64, bool, nil, []any, map[string]any) or Symbol.
type Recipe struct {
	Fixed   map[string]any `json:"fixed" yaml:"fixed"`
	Mutable map[string]any `json:"mutable" yaml:"mutable"`
	Metrics []MetricSpec   `json:"metrics" yaml:"metrics"`
	// Entrypoint is the bundle-relative program the process executor runs
	// (for example "code/run.sh"); empty for builtin workloads.
	Entrypoint string `json:"entrypoint,omitempty" yaml:"entrypoint"`
	// Image is a container image archive in the bundle (as `docker save`
	// writes one) whose file system the entrypoint runs in, as `/` of the
	// sandbox; empty runs it on the runner's own /usr.
	Image string `json:"image,omitempty" yaml:"image"`
}

// RecipePlan is what a builtin workload will measure for a recipe, read
// from it before anything runs.
type RecipePlan struct {
	// Shapes are the operator shapes of a Level 0 run, in the order the
	// run logs them (their metadata.shape); empty for other levels.
	Shapes []string
}

// Get returns the value of key from Mutable, falling back to Fixed.
func (r *Recipe) Get(key string) (any, bool) {
	if v, ok := r.Mutable[key]; ok {
		return v, true
	}
	v, ok := r.Fixed[key]
	return v, ok
}

// MetricSpec is one acceptable metric. Acceptable nil means "not checked",
// as in Deep500.
type MetricSpec struct {
	Name       string         `json:"name" yaml:"name"`
	Acceptable *float64       `json:"acceptable" yaml:"acceptable"`
	Direction  Direction      `json:"direction,omitempty" yaml:"direction"`
	Args       map[string]any `json:"args,omitempty" yaml:"args"`
}

// Symbol is a reference to code in a Deep500 Python recipe: a dotted name
// such as d5.ShuffleSampler, or a call such as d5.TestAccuracy(max_acc=True)
// when Call is set.
type Symbol struct {
	Name   string         `json:"symbol" yaml:"symbol"`
	Call   bool           `json:"call,omitempty" yaml:"call"`
	Args   []any          `json:"args,omitempty" yaml:"args"`
	Kwargs map[string]any `json:"kwargs,omitempty" yaml:"kwargs"`
}
