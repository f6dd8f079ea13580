package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	d5list "github.com/deep500/d5list"
)

// RegistryLabels are the labels a runner that pulls from registries
// advertises, one registry.HOST=yes for each, so that a job whose image
// one of them serves comes to it.
func RegistryLabels(registries []string) map[string]string {
	labels := map[string]string{}
	for _, r := range registries {
		if r != "*" {
			labels[d5list.LabelRegistryPrefix+r] = "yes"
		}
	}
	return labels
}

// pull returns the archive of a registry image pinned by digest: the one
// the cache keeps under that digest, or one written there now from the
// registry, which the runner's operator must allow. go-containerregistry
// checks the manifest against the digest asked for and every layer
// against the digest the manifest gives, so what is cached is the image
// the competitor pinned, whatever the registry serves. The archive is
// unpacked with the same checks as one in the bundle.
func (p *Process) pull(ctx context.Context, image string) (string, error) {
	ref, err := name.NewDigest(image, name.StrictValidation)
	if err != nil {
		return "", imageErr("%q is not a registry image reference: %v", image, err)
	}
	// The host as the job's registry label names it (go-containerregistry
	// would say index.docker.io for docker.io): one rule on both sides.
	host := d5list.ImageRegistry(image)
	if !slices.Contains(p.opts.Registries, host) && !slices.Contains(p.opts.Registries, "*") {
		return "", d5list.Errorf(d5list.EUNAVAILABLE, "recipe image: this runner does not pull from %s (its operator allows it with `d5list runner --registry %s`)", host, host)
	}
	cached := filepath.Join(p.opts.ImageCache, strings.ReplaceAll(ref.DigestStr(), ":", "-")+".tar")
	if fi, err := os.Lstat(cached); err == nil && fi.Mode().IsRegular() {
		return cached, nil
	}
	// The runner's user's registry logins (docker login, or a credential
	// helper) open private registries.
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return "", d5list.Errorf(d5list.EUNAVAILABLE, "recipe image: pulling %s: %v", image, err)
	}
	// The layers' sizes as the manifest gives them bound the download
	// before it starts; unpacking bounds what they expand to.
	manifest, err := img.Manifest()
	if err != nil {
		return "", imageErr("%s: reading its manifest: %v", image, err)
	}
	var compressed int64
	for _, l := range manifest.Layers {
		compressed += l.Size
	}
	if lim := p.opts.ImageLimits.withDefaults(); compressed > lim.Bytes {
		return "", imageErr("%s: its layers are %d bytes, over the runner's image limit of %d", image, compressed, lim.Bytes)
	}
	if err := os.MkdirAll(p.opts.ImageCache, 0o755); err != nil {
		return "", err
	}
	// Written aside and renamed, so that a job pulling the same image at
	// the same time, or a pull cut off, never leaves half an archive
	// under the digest.
	suffix := make([]byte, 8)
	rand.Read(suffix)
	part := cached + ".part-" + hex.EncodeToString(suffix)
	if err := tarball.WriteToFile(part, ref, img); err != nil {
		os.Remove(part)
		return "", d5list.Errorf(d5list.EUNAVAILABLE, "recipe image: pulling %s: %v", image, err)
	}
	if err := os.Rename(part, cached); err != nil {
		os.Remove(part)
		return "", err
	}
	return cached, nil
}
