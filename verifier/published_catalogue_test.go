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

// A recipe that names a container image the bundle does not hold is
// refused at upload, naming the recipe file (issue 14).
func TestRecipeImageMustBeInTheBundle(t *testing.T) {
	bench := &d5list.Benchmark{ID: "l2-x", Level: 2}
	check := func(files ...string) []d5list.Reason {
		b := &bundle.Bundle{Recipe: d5list.Recipe{Image: "code/image.tar"}, RecipeFile: "recipe.yaml",
			Manifest: d5list.Manifest{Division: d5list.DivisionOpen}}
		for _, f := range files {
			b.Files = append(b.Files, bundle.FileInfo{Name: f})
		}
		c := &checker{bench: bench, b: b}
		c.recipe()
		var out []d5list.Reason
		for _, r := range c.reasons {
			if r.Code == CodeRecipeImageMissing {
				out = append(out, r)
			}
		}
		return out
	}
	if rs := check("code/run.sh"); len(rs) != 1 || rs[0].File != "recipe.yaml" {
		t.Fatalf("a missing image: %+v, want one %s naming recipe.yaml", rs, CodeRecipeImageMissing)
	}
	if rs := check("code/run.sh", "code/image.tar"); len(rs) != 0 {
		t.Fatalf("an image the bundle holds: %+v", rs)
	}
}
