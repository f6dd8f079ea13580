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
