package docs_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDeployPathSaysToBuildTheImage: the image tag the deploy overlays pin is
// a placeholder no registry serves, so every guide that deploys an overlay
// must say to build and push an image with make image first, and the
// component that pins the tag must say it is a placeholder.
func TestDeployPathSaysToBuildTheImage(t *testing.T) {
	b, err := os.ReadFile("../examples/deploy/components/image/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`newTag: (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no newTag in the image component")
	}
	tag := string(m[1])
	if !strings.Contains(string(b), tag+" is\n# a placeholder") && !strings.Contains(string(b), tag+" is a placeholder") {
		t.Errorf("the image component pins %s without saying it is a placeholder", tag)
	}
	for _, f := range []string{"install-argocd.md", "install-flux.md", "install-direct.md", "image.md", "../examples/deploy/README.md"} {
		t.Run(f, func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(strings.Fields(string(b)), " ")
			if !strings.Contains(text, "make image") || !regexp.MustCompile(`(?i)no (release )?image (is|has been) published`).MatchString(text) {
				t.Errorf("%s does not say that no image is published and to build one with make image", f)
			}
		})
	}
}
