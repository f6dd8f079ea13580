package bundle

import (
	"os"
	"reflect"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/cifar10_resnet44/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRecipeTwinsParseIdentically(t *testing.T) {
	acc := 93.0
	want := d5list.Recipe{
		Fixed: map[string]any{"model": "resnet", "model_kwargs": map[string]any{"depth": int64(44)},
			"dataset": "cifar10", "epochs": int64(90)},
		Mutable: map[string]any{
			"batch_size":     int64(64),
			"executor":       d5list.Symbol{Name: "d5fw.from_model"},
			"optimizer":      d5list.Symbol{Name: "d5fw.MomentumOptimizer"},
			"optimizer_args": []any{0.1, 0.9},
			"train_sampler":  d5list.Symbol{Name: "d5.ShuffleSampler"},
		},
		Metrics: []d5list.MetricSpec{{Name: "test_accuracy", Acceptable: &acc, Direction: d5list.HigherIsBetter,
			Args: map[string]any{"max_acc": true}}},
	}
	for _, name := range []string{"recipe.py", "recipe.yaml", "recipe.json"} {
		got, err := ParseRecipe(name, readFixture(t, name))
		if err != nil {
			t.Fatalf("%s: %v %+v", name, err, d5list.ErrorReasons(err))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s parsed to\n%#v\nwant\n%#v", name, got, want)
		}
	}
}

func TestParseRecipePythonValues(t *testing.T) {
	src := `FIXED = {"s": 'it\'s\n', "r": r'a\d', 'cat': "a" 'b', 't': """x
y""", 'neg': -3, 'f': 1e-3, 'h': 0x1F, 'u': 1_000, 'n': None, 'b': False, 'e': (), 'one': (1,), 'nested': [[1, 2], {'k': (3, 'v')}]}
MUTABLE = {'call': d5.GPUDevice(), 'c2': d5ref.Crop('0', 'label', (32, 32),
                   random_crop=True, padding=(4, 4)), 'bare': resnet}
METRICS = [(d5.WallclockTime, None), ('custom_metric', 1), (d5.TrainingAccuracy(), 0.5)]
ENTRYPOINT = 'code/run.sh'
`
	r, err := ParseRecipe("recipe.py", []byte(src))
	if err != nil {
		t.Fatalf("%v %+v", err, d5list.ErrorReasons(err))
	}
	wantFixed := map[string]any{"s": "it's\n", "r": `a\d`, "cat": "ab", "t": "x\ny", "neg": int64(-3), "f": 1e-3,
		"h": int64(31), "u": int64(1000), "n": nil, "b": false, "e": []any{}, "one": []any{int64(1)},
		"nested": []any{[]any{int64(1), int64(2)}, map[string]any{"k": []any{int64(3), "v"}}}}
	if !reflect.DeepEqual(r.Fixed, wantFixed) {
		t.Errorf("fixed = %#v", r.Fixed)
	}
	wantMutable := map[string]any{
		"call": d5list.Symbol{Name: "d5.GPUDevice", Call: true},
		"c2": d5list.Symbol{Name: "d5ref.Crop", Call: true, Args: []any{"0", "label", []any{int64(32), int64(32)}},
			Kwargs: map[string]any{"random_crop": true, "padding": []any{int64(4), int64(4)}}},
		"bare": d5list.Symbol{Name: "resnet"},
	}
	if !reflect.DeepEqual(r.Mutable, wantMutable) {
		t.Errorf("mutable = %#v", r.Mutable)
	}
	if len(r.Metrics) != 3 {
		t.Fatalf("metrics = %+v", r.Metrics)
	}
	m0, m1, m2 := r.Metrics[0], r.Metrics[1], r.Metrics[2]
	if m0.Name != "wallclock_time" || m0.Acceptable != nil || m0.Direction != d5list.LowerIsBetter {
		t.Errorf("metric 0 = %+v", m0)
	}
	if m1.Name != "custom_metric" || m1.Acceptable == nil || *m1.Acceptable != 1 {
		t.Errorf("metric 1 = %+v", m1)
	}
	if m2.Name != "train_accuracy" || m2.Direction != d5list.HigherIsBetter || m2.Args != nil {
		t.Errorf("metric 2 = %+v", m2)
	}
	if r.Entrypoint != "code/run.sh" {
		t.Errorf("entrypoint = %q", r.Entrypoint)
	}
}

func TestParseRecipeErrors(t *testing.T) {
	okFM := "FIXED = {'a': 1}\nMUTABLE = {'b': 2}\n"
	tests := []struct {
		name, file, src string
		line            int
		msg             string
	}{
		{"py missing METRICS", "recipe.py", okFM, 0, "missing METRICS"},
		{"py missing FIXED", "recipe.py", "MUTABLE = {}\nMETRICS = []\n", 0, "missing FIXED"},
		{"py FIXED wrong type", "recipe.py", "FIXED = [1]\nMUTABLE = {}\nMETRICS = []\n", 1, "FIXED must be a mapping"},
		{"py operator", "recipe.py", okFM + "METRICS = [(d5.TestAccuracy(), 90 + 3)]\n", 3, `unsupported operator "+"`},
		{"py section item set", "recipe.py", okFM + "METRICS = []\nFIXED['epochs'] = 2 * 3\n", 4, "FIXED is changed here"},
		{"py section augmented", "recipe.py", okFM + "METRICS = []\nFIXED |= {'a': 1}\n", 4, "FIXED is changed here"},
		{"py section in a tuple target", "recipe.py", okFM + "METRICS = []\nbatch, MUTABLE = 1, {}\n", 4, "MUTABLE is changed here"},
		{"py section deleted", "recipe.py", okFM + "METRICS = []\ndel MUTABLE['b']\n", 4, "MUTABLE is changed here"},
		{"py power in call", "recipe.py", okFM + "METRICS = [(d5.X(a=2**3), 1)]\n", 3, `unsupported operator "*"`},
		{"py lambda", "recipe.py", "FIXED = {'f': lambda x: x}\nMUTABLE = {}\nMETRICS = []\n", 1, "lambda"},
		{"py section method", "recipe.py", okFM + "METRICS = []\nprint('hi')\nMUTABLE.update(b=3)\n", 5, "MUTABLE is changed here"},
		{"py section assigned in a block", "recipe.py", okFM + "METRICS = []\nif BATCH > 64:\n    FIXED = {}\n", 5, "FIXED is changed here"},
		{"py section changed by the main guard", "recipe.py", okFM + "METRICS = []\nif __name__ == '__main__':\n    pass\nelse:\n    METRICS += [1]\n", 7, "METRICS is changed here"},
		{"py section global in a helper", "recipe.py", okFM + "METRICS = []\ndef f():\n    global FIXED\n    FIXED = {}\n", 5, "FIXED is changed here"},
		{"py section annotated, no value", "recipe.py", okFM + "METRICS: list\n", 0, "missing METRICS"},
		{"py unclosed", "recipe.py", okFM + "METRICS = [\n  (d5.TestAccuracy(), 93.0)\n", 3, "never closed"},
		{"py twice", "recipe.py", okFM + "METRICS = []\nFIXED = {}\n", 4, "assigned twice"},
		{"py fstring", "recipe.py", "FIXED = {'a': f'x{y}'}\nMUTABLE = {}\nMETRICS = []\n", 1, "f-strings"},
		{"py indent", "recipe.py", okFM + "  METRICS = []\n", 3, "indentation"},
		{"py comprehension", "recipe.py", okFM + "METRICS = [x for x in y]\n", 3, "comprehension"},
		{"py subscription", "recipe.py", okFM + "METRICS = [d5.X()[0]]\n", 3, "unsupported expression"},
		{"py bad acceptable", "recipe.py", okFM + "METRICS = [(d5.TestAccuracy(), '93')]\n", 3, "acceptable value must be a number"},
		{"py non-string key", "recipe.py", "FIXED = {1: 2}\nMUTABLE = {}\nMETRICS = []\n", 1, "keys must be strings"},
		{"py leading zero", "recipe.py", "FIXED = {'a': 012}\nMUTABLE = {}\nMETRICS = []\n", 1, "leading zeros"},
		{"yaml missing mutable", "recipe.yaml", "fixed: {a: 1}\nmetrics: []\n", 0, "missing mutable"},
		{"yaml metrics not list", "recipe.yaml", "fixed: {}\nmutable: {}\nmetrics:\n  name: x\n", 4, "metrics must be a list"},
		{"yaml unknown key", "recipe.yaml", "fixed: {}\nmutable: {}\nmetrics: []\nmetircs: []\n", 4, `unknown key "metircs"`},
		{"yaml metric no name", "recipe.yaml", "fixed: {}\nmutable: {}\nmetrics:\n  - acceptable: 3\n", 4, "missing name"},
		{"yaml bad direction", "recipe.yaml", "fixed: {}\nmutable: {}\nmetrics:\n  - {name: x, direction: up}\n", 4, "direction"},
		{"yaml syntax", "recipe.yaml", "fixed: {}\nmutable: [\n", 2, "invalid YAML"},
		{"yaml duplicate key", "recipe.yaml", "fixed: {}\nmutable: {}\nmutable: {}\nmetrics: []\n", 3, "given twice"},
		{"yaml bad symbol", "recipe.yaml", "fixed: {}\nmutable: {x: {symbol: d5.A, kwarg: {}}}\nmetrics: []\n", 2, "unknown key"},
		{"json trailing comma", "recipe.json", "{\"fixed\": {},\n\"mutable\": {},\n\"metrics\": [],}\n", 3, "invalid JSON"},
		{"json fixed wrong type", "recipe.json", "{\"fixed\": 3,\n\"mutable\": {},\n\"metrics\": []}\n", 1, "fixed must be a mapping"},
		{"unknown ext", "recipe.toml", "", 0, "unknown recipe type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRecipe(tc.file, []byte(tc.src))
			if err == nil {
				t.Fatal("accepted")
			}
			if d5list.ErrorCode(err) != d5list.EINVALID {
				t.Errorf("code %s", d5list.ErrorCode(err))
			}
			rs := d5list.ErrorReasons(err)
			for _, r := range rs {
				if r.File == tc.file && r.Line == tc.line && strings.Contains(r.Message, tc.msg) && r.Code == CodeRecipe {
					return
				}
			}
			t.Errorf("no reason at %s:%d containing %q: %+v", tc.file, tc.line, tc.msg, rs)
		})
	}
}

func TestParseRecipeCollectsSeveralReasons(t *testing.T) {
	src := "fixed: [1]\nmutable: 3\nmetrics:\n  - {name: a, acceptable: x}\n  - 7\n"
	_, err := ParseRecipe("recipe.yaml", []byte(src))
	if got := len(d5list.ErrorReasons(err)); got != 4 {
		t.Errorf("got %d reasons, want 4: %+v", got, d5list.ErrorReasons(err))
	}
}

func TestYAMLAliasBombStops(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		b.WriteString("a" + string(rune('0'+i%10)) + string(rune('a'+i)) + ": &a" + string(rune('a'+i)) + " [")
		prev := "*a0"
		if i > 1 {
			prev = "*a" + string(rune('a'+i-1))
		}
		b.WriteString(strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	b.WriteString("fixed: {bomb: *al}\nmutable: {}\nmetrics: []\n")
	_, err := ParseRecipe("recipe.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than") && !strings.Contains(err.Error(), "unknown key") {
		t.Fatalf("alias bomb: %v", err)
	}
}

func TestMetricNamesAndDirections(t *testing.T) {
	tests := []struct {
		symbol, name string
		dir          d5list.Direction
	}{
		{"d5.TestAccuracy", "test_accuracy", d5list.HigherIsBetter},
		{"TrainingAccuracy", "train_accuracy", d5list.HigherIsBetter},
		{"d5.WallclockTime", "wallclock_time", d5list.LowerIsBetter},
		{"d5.L2Error", "l2_error", d5list.LowerIsBetter},
		{"mine.Top5HTTPAccuracy", "top5_http_accuracy", d5list.HigherIsBetter},
		{"time_to_train_s", "time_to_train_s", d5list.LowerIsBetter},
		{"throughput", "throughput", d5list.HigherIsBetter},
	}
	for _, tc := range tests {
		if got := MetricName(tc.symbol); got != tc.name {
			t.Errorf("MetricName(%s) = %s, want %s", tc.symbol, got, tc.name)
		}
		if got := MetricDirection(tc.name); got != tc.dir {
			t.Errorf("MetricDirection(%s) = %s, want %s", tc.name, got, tc.dir)
		}
	}
}
