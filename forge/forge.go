// Package forge opens a pull request (GitHub, Gitea) or merge request
// (GitLab) for a review branch through the hosting service's REST API, and
// never a second one for the same branch: it first looks for an open request
// from the branch. The endpoints and fields are those of the services'
// published API descriptions (the subsets in forgetest/testdata, which the
// stand-in forgetest enforces on every request and answer):
//
//   - GitHub: GET and POST /repos/{owner}/{repo}/pulls (list filtered by
//     state=open and head=owner:branch; create with head, base, title, body;
//     html_url), token as "Authorization: Bearer";
//   - Gitea: the same paths under /api/v1 (state=open, paged with page and
//     limit; its list has no head filter, so the client reads pages until an
//     empty one and matches head.ref), token as "Authorization: token";
//   - GitLab: GET and POST /projects/{id}/merge_requests (state=opened,
//     source_branch; create with source_branch, target_branch, title,
//     description; web_url), token as PRIVATE-TOKEN.
package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/waldur/waldur-gitops/config"
	"github.com/waldur/waldur-gitops/internal/hostbound"
	"github.com/waldur/waldur-gitops/internal/redact"
)

// Request is what a review branch's request says.
type Request struct {
	// Branch is the review branch, Base the branch it asks to be merged into.
	Branch, Base string
	// Title and Body describe the change (the body carries the Waldur trailers).
	Title, Body string
}

// Client talks to one forge about one repository.
type Client struct {
	cfg   config.Forge
	token string
	http  *http.Client
}

// APIURLKey is the config key of the forge's API root.
const APIURLKey = "review.forge.api_url"

// New builds a client on a copy of hc (nil: a new client) that follows a
// redirect only within the origin of the API root, as GitHub's API does for a
// renamed repository: the token rides in a header of every request
// (PRIVATE-TOKEN is not one net/http drops on the way to another host).
func New(cfg config.Forge, token config.Secret, hc *http.Client) *Client {
	return &Client{cfg: cfg, token: token.Reveal(), http: hostbound.Client(hc, APIURLKey, hostbound.SameOrigin)}
}

// Ensure opens the request for r.Branch unless one is open already. It
// returns the request's web address and whether it opened it.
func (c *Client) Ensure(ctx context.Context, r Request) (string, bool, error) {
	if u, err := c.find(ctx, r.Branch); err != nil || u != "" {
		return u, false, err
	}
	u, err := c.open(ctx, r)
	return u, err == nil, err
}

func (c *Client) base() string { return strings.TrimRight(c.cfg.APIURL, "/") }

func (c *Client) repoPath() string {
	if c.cfg.Type == config.ForgeGitLab {
		return "/projects/" + url.PathEscape(c.cfg.Repository)
	}
	owner, name, _ := strings.Cut(c.cfg.Repository, "/")
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name)
}

// maxPages bounds the open requests find reads (at 50 a page).
const maxPages = 40

// find returns the web address of an open request from branch, "" for none.
func (c *Client) find(ctx context.Context, branch string) (string, error) {
	q := url.Values{}
	var path string
	switch c.cfg.Type {
	case config.ForgeGitLab:
		path = c.repoPath() + "/merge_requests"
		q.Set("state", "opened")
		q.Set("source_branch", branch)
	default:
		path = c.repoPath() + "/pulls"
		q.Set("state", "open")
		if c.cfg.Type == config.ForgeGitHub {
			owner, _, _ := strings.Cut(c.cfg.Repository, "/")
			q.Set("head", owner+":"+branch)
		}
	}
	for page := 1; page <= maxPages; page++ {
		q.Set("page", fmt.Sprint(page))
		q.Set(map[bool]string{true: "per_page", false: "limit"}[c.cfg.Type != config.ForgeGitea], "50")
		var list []struct {
			HTMLURL      string `json:"html_url"`
			WebURL       string `json:"web_url"`
			SourceBranch string `json:"source_branch"`
			Head         struct {
				Ref string `json:"ref"`
			} `json:"head"`
		}
		if err := c.do(ctx, http.MethodGet, path+"?"+q.Encode(), nil, &list); err != nil {
			return "", err
		}
		for _, pr := range list {
			if pr.Head.Ref == branch || pr.SourceBranch == branch {
				return pr.HTMLURL + pr.WebURL, nil
			}
		}
		// A service may cap the page size below what was asked (Gitea's
		// MAX_RESPONSE_ITEMS): only an empty page ends the list.
		if len(list) == 0 {
			return "", nil
		}
	}
	return "", fmt.Errorf("%s %s%s: more than %d pages of open requests", http.MethodGet, c.cfg.APIURL, path, maxPages)
}

func (c *Client) open(ctx context.Context, r Request) (string, error) {
	var body any
	path := c.repoPath() + "/pulls"
	if c.cfg.Type == config.ForgeGitLab {
		path = c.repoPath() + "/merge_requests"
		body = map[string]string{"source_branch": r.Branch, "target_branch": r.Base, "title": r.Title, "description": r.Body}
	} else {
		body = map[string]string{"head": r.Branch, "base": r.Base, "title": r.Title, "body": r.Body}
	}
	var out struct {
		HTMLURL string `json:"html_url"`
		WebURL  string `json:"web_url"`
	}
	if err := c.do(ctx, http.MethodPost, path, body, &out); err != nil {
		return "", err
	}
	return out.HTMLURL + out.WebURL, nil
}

// do sends one request and decodes its answer into out; the token, and
// every secret registered from the config, are masked in the error (a server
// or a proxy may echo a header).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	if err := c.send(ctx, method, path, body, out); err != nil {
		return redact.Default().With(c.token).Error(err)
	}
	return nil
}

func (c *Client) send(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base()+path, rd)
	if err != nil {
		return fmt.Errorf("%s forge request: %w", c.cfg.Type, err)
	}
	req.Header.Set("Accept", "application/json")
	if c.cfg.Type == config.ForgeGitHub {
		// GitHub's documented media type and REST API version.
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	switch c.cfg.Type {
	case config.ForgeGitLab:
		req.Header.Set("PRIVATE-TOKEN", c.token)
	case config.ForgeGitea:
		req.Header.Set("Authorization", "token "+c.token)
	default:
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s%s: %w", method, redact.URL(c.cfg.APIURL), path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		hint := ""
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			hint = " (check the token, " + c.cfg.TokenSource() + ")"
		}
		return fmt.Errorf("%s %s%s: %s: %s%s", method, c.cfg.APIURL, path, resp.Status, strings.TrimSpace(string(b[:min(len(b), 300)])), hint)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s%s: decode the answer: %w", method, c.cfg.APIURL, path, err)
	}
	return nil
}
