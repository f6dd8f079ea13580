package bundle

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	d5list "github.com/deep500/d5list"
)

// Every error from the readers must be a *d5list.Error with reasons, and
// nothing may panic or hang.
func checkFuzzErr(t *testing.T, err error) {
	if err == nil {
		return
	}
	if _, ok := err.(*d5list.Error); !ok {
		t.Fatalf("error %T is not *d5list.Error: %v", err, err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add(tarGz(f, validEntries()))
	f.Add(tarGz(f, with(validEntries(), ent{name: "../x", body: "x"})))
	f.Add(tarGz(f, []ent{{name: "a/", typ: '5'}, {name: "a/submission.json", body: "{}"}}))
	f.Add(zeroBomb(f, "code/z", 2))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Add([]byte("not an archive"))
	lim := Limits{MaxFileBytes: 1 << 20, MaxTotalBytes: 4 << 20, MaxFiles: 100, MaxResultBytes: 64 << 10, MaxCompression: 100, MaxArchiveBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Read(bytes.NewReader(data), lim)
		checkFuzzErr(t, err)
		if err == nil && (len(b.Results) == 0 || b.RecipeFile == "") {
			t.Fatalf("accepted an incomplete bundle: %+v", b)
		}
	})
}

func FuzzParseRecipePy(f *testing.F) {
	f.Add(readFixture(f, "recipe.py"))
	f.Add([]byte("FIXED = {'a': dict(b=[1, (2, 3.5e-1)], c=None)}\nMUTABLE = {'x': d5.Y(1, 'z', k=True)}\nMETRICS = [(d5.TestAccuracy(), None)]\n"))
	f.Add([]byte("from . import (a, b,)\nimport x.y as z\nENTRYPOINT = r'code/run.sh'\nFIXED = {\n  'k': '''multi\nline''' \\\n}\n"))
	f.Add([]byte("if __name__ == '__main__':\n    run()\nFIXED = {0x10: -0o7}\n"))
	f.Add([]byte("@dec\ndef f(a: int) -> None:\n    global FIXED\nFIXED: dict = {}\nx, y = 1, 2\nif __name__ == '__main__':\n    pass\nelse:\n    MUTABLE['a'] += 1\n"))
	for _, name := range []string{"cifar10_resnet44.py", "imagenet_resnet50.py"} {
		if data, err := os.ReadFile(filepath.Join(deep500Recipes, name)); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseRecipe("recipe.py", data)
		checkFuzzErr(t, err)
	})
}

func FuzzParseRecipeYAML(f *testing.F) {
	f.Add(readFixture(f, "recipe.yaml"))
	f.Add([]byte(validRecipe))
	f.Add([]byte("base: &b {x: 1}\nfixed: {<<: *b, y: [1, 2.5, ~, true]}\nmutable: {s: {symbol: d5.A, args: [1], kwargs: {k: v}}}\nmetrics: [[{symbol: d5.TestAccuracy, call: true}, 93]]\n"))
	f.Add([]byte("fixed: !!binary aGk=\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRecipe("recipe.yaml", data)
		checkFuzzErr(t, err)
		if err == nil && (r.Fixed == nil || r.Mutable == nil || r.Metrics == nil) {
			t.Fatalf("accepted a recipe without its sections: %+v", r)
		}
	})
}
