package bundle

import (
	"strings"
	"testing"
)

// A recipe names its container image as it names its entrypoint: a clean
// path inside the bundle, in recipe.yaml or as recipe.py's IMAGE (issue 14).
func TestRecipeImage(t *testing.T) {
	const yamlRecipe = "fixed: {model: mlp}\nmutable: {batch_size: 32}\nmetrics:\n  - {name: test_accuracy, acceptable: 0.9}\nentrypoint: code/run.sh\nimage: %s\n"
	r, err := ParseRecipe("recipe.yaml", []byte(strings.Replace(yamlRecipe, "%s", "code/image.tar", 1)))
	if err != nil || r.Image != "code/image.tar" {
		t.Fatalf("recipe.yaml image: %q, %v", r.Image, err)
	}
	py := "FIXED = {'model': 'mlp'}\nMUTABLE = {'batch_size': 32}\nMETRICS = [('test_accuracy', 0.9)]\nENTRYPOINT = 'code/run.sh'\nIMAGE = 'code/image.tar'\n"
	if r, err := ParseRecipe("recipe.py", []byte(py)); err != nil || r.Image != "code/image.tar" {
		t.Fatalf("recipe.py IMAGE: %q, %v", r.Image, err)
	}
	_, err = ParseRecipe("recipe.yaml", []byte(strings.Replace(yamlRecipe, "%s", "../host.tar", 1)))
	if err == nil || !strings.Contains(err.Error(), "recipe.yaml:6") || !strings.Contains(err.Error(), "image") {
		t.Fatalf("an image outside the bundle: %v, want the line and the key named", err)
	}
}

// A registry image is pinned by digest and parsed as registries' tools
// parse a reference; a tag, which can move between the claim and the
// re-run, is refused with the way to find the digest (issue 14).
func TestRecipeRegistryImage(t *testing.T) {
	const recipe = "fixed: {model: mlp}\nmutable: {batch_size: 32}\nmetrics:\n  - {name: test_accuracy, acceptable: 0.9}\nentrypoint: code/run.sh\nimage: %s\n"
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		image, wantErr string
	}{
		{"ghcr.io/team/trainer@" + digest, ""},
		{"127.0.0.1:5000/trainer@" + digest, ""},
		{"docker.io/pytorch/pytorch@" + digest, ""},
		// The runner must know which registry to ask: it is named.
		{"pytorch/pytorch@" + digest, "registry to be explicitly defined"},
		{"pytorch/pytorch:2.3.0-cuda12.1", "pinned by digest"},
		{"ghcr.io/team/trainer@sha256:abc", "not a registry image reference"},
		{"ghcr.io/Team/trainer@" + digest, "not a registry image reference"},
	} {
		r, err := ParseRecipe("recipe.yaml", []byte(strings.Replace(recipe, "%s", tc.image, 1)))
		switch {
		case tc.wantErr == "" && (err != nil || r.Image != tc.image):
			t.Errorf("%s: %q, %v; want it read as it is", tc.image, r.Image, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "recipe.yaml:6")):
			t.Errorf("%s: %v; want %q on recipe.yaml:6", tc.image, err, tc.wantErr)
		}
	}
}
