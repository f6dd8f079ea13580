package verifier

import (
	"os"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/catalog"
)

// Deep500's published recipes are closed-division recipes of the catalogue
// entries made from them, read as Deep500's loader reads them; a changed
// fixed component is refused (issue 14).
func TestPublishedRecipesMatchTheirCatalogueEntries(t *testing.T) {
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, benchmark string }{
		{"cifar10_resnet44.py", "l2-cifar10-resnet44-gpu"},
		{"imagenet_resnet50.py", "l2-imagenet-resnet50-gpu"},
	} {
		t.Run(tc.benchmark, func(t *testing.T) {
			src, err := os.ReadFile("../../shared/peer-data/deep500-recipes/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			bench, err := catalog.Lookup(bs, tc.benchmark)
			if err != nil {
				t.Fatal(err)
			}
			check := func(r d5list.Recipe) []d5list.Reason {
				c := &checker{bench: bench, b: &bundle.Bundle{Recipe: r, RecipeFile: tc.file,
					Manifest: d5list.Manifest{Division: d5list.DivisionClosed}}}
				c.recipe()
				return c.reasons
			}
			r, err := bundle.ParseRecipe(tc.file, src)
			if err != nil {
				t.Fatal(err)
			}
			if reasons := check(r); len(reasons) != 0 {
				t.Fatalf("the published recipe is refused for %s: %+v", tc.benchmark, reasons)
			}
			r.Fixed["epochs"] = int64(45)
			if reasons := check(r); len(reasons) != 1 || reasons[0].Code != CodeRecipeFixedMismatch {
				t.Fatalf("half the epochs in the closed division: %+v, want one %s", reasons, CodeRecipeFixedMismatch)
			}
		})
	}
}
