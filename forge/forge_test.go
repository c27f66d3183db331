package forge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/forge"
	"github.com/waldur/waldur-gitops/forge/forgetest"
)

// Per forge: the first Ensure opens the request with the description, the
// second finds it and opens none; a closed one is replaced; a bad token is an
// error naming the call.
func TestEnsureOpensOneRequestPerBranch(t *testing.T) {
	for _, typ := range []string{config.ForgeGitHub, config.ForgeGitea, config.ForgeGitLab} {
		t.Run(typ, func(t *testing.T) {
			repo := "site/tenants"
			srv := forgetest.New(t, typ, repo, "s3cret")
			// Another branch's request is listed too, and ignored.
			other := forge.New(config.Forge{Type: typ, APIURL: srv.APIURL(), Repository: repo}, "s3cret", nil)
			ctx := context.Background()
			if _, _, err := other.Ensure(ctx, forge.Request{Branch: "someone/else", Base: "main", Title: "x"}); err != nil {
				t.Fatal(err)
			}
			c := forge.New(config.Forge{Type: typ, APIURL: srv.APIURL(), Repository: repo}, "s3cret", nil)
			req := forge.Request{Branch: "waldur-gitops/review/0123456789ab", Base: "main", Title: "waldur-gitops: review -1", Body: "- Tenant o/cluster/x\n\nWaldur-Order: d000"}
			u, created, err := c.Ensure(ctx, req)
			if err != nil || !created || u == "" {
				t.Fatalf("first: %q %v %v", u, created, err)
			}
			u2, created, err := c.Ensure(ctx, req)
			if err != nil || created || u2 != u {
				t.Fatalf("second: %q %v %v (first %q)", u2, created, err, u)
			}
			prs := srv.PRs()
			if len(prs) != 2 || srv.Posts() != 2 || prs[1].Head != req.Branch || prs[1].Base != "main" || !strings.Contains(prs[1].Body, "Waldur-Order: d000") {
				t.Errorf("requests %+v", prs)
			}
			srv.Close(req.Branch)
			if _, created, err := c.Ensure(ctx, req); err != nil || !created {
				t.Errorf("after close: %v %v", created, err)
			}
			bad := forge.New(config.Forge{Type: typ, APIURL: srv.APIURL(), Repository: repo, TokenEnv: "FORGE_TOKEN"}, "wrong", nil)
			if _, _, err := bad.Ensure(ctx, req); err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong") {
				t.Errorf("bad token: %v", err)
			} else if !strings.Contains(err.Error(), "(check the token, review.forge.token_env $FORGE_TOKEN)") {
				t.Errorf("the error does not name where the token came from: %v", err)
			}
		})
	}
}

// A request opened earlier for the branch is found though it lies past the
// first page and the service caps the page size below what the client asks
// (Gitea's MAX_RESPONSE_ITEMS): no second request is opened.
func TestEnsureFindsARequestPastACappedPage(t *testing.T) {
	for _, typ := range []string{config.ForgeGitHub, config.ForgeGitea, config.ForgeGitLab} {
		t.Run(typ, func(t *testing.T) {
			srv := forgetest.New(t, typ, "site/tenants", "s3cret")
			srv.MaxPage = 10
			for i := range 25 {
				srv.Add(fmt.Sprintf("feature/%02d", i), "main", "other work")
			}
			branch := "waldur-gitops/review/00aa00aa00aa"
			srv.Add(branch, "main", "opened before")
			c := forge.New(config.Forge{Type: typ, APIURL: srv.APIURL(), Repository: "site/tenants"}, "s3cret", nil)
			u, created, err := c.Ensure(context.Background(), forge.Request{Branch: branch, Base: "main", Title: "t"})
			if err != nil || created || !strings.HasSuffix(u, "/26") {
				t.Fatalf("got %q created=%v err=%v; want the existing request 26 (requests %q)", u, created, err, srv.Requests())
			}
			if srv.Posts() != 0 {
				t.Errorf("%d create calls", srv.Posts())
			}
		})
	}
}
