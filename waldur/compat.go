package waldur

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Feature is a Waldur capability that appeared after the oldest release the
// tool supports (OldestSupportedVersion).
type Feature string

// Features the tool may use, with the Waldur release that first has each
// (the first release of the generated client that carries it, see
// docs/waldur.md#waldur-compatibility).
const (
	// FeatureAgentIdentity: site-agent identities, services and processors.
	FeatureAgentIdentity Feature = "agent identity"
	// FeatureAgentCompatibility: the compatibility answer of an agent identity.
	FeatureAgentCompatibility Feature = "agent compatibility answer"
	// FeatureRegisterQueue: register_queue for event-driven processing.
	FeatureRegisterQueue Feature = "register_queue"
	// FeatureMembershipSyncStatus: set_membership_sync_statuses on a resource.
	FeatureMembershipSyncStatus Feature = "membership sync statuses"
	// FeatureResourceFeedback: set_as_ok, set_as_erred, set_backend_metadata
	// and refresh_last_sync on a provider resource.
	FeatureResourceFeedback Feature = "resource feedback"
	// FeatureFractionalLimits: resource and order limits that are numbers, not
	// integers.
	FeatureFractionalLimits Feature = "fractional limits"
)

// OldestSupportedVersion is the oldest Waldur release the tool is tested
// against (the 8.0.5 contract).
const OldestSupportedVersion = "8.0.5"

// FeatureVersions maps each Feature to the first Waldur release that has it.
var FeatureVersions = map[Feature]string{
	FeatureAgentIdentity:        "7.9.0",
	FeatureResourceFeedback:     "7.9.0",
	FeatureRegisterQueue:        "8.1.0",
	FeatureMembershipSyncStatus: "8.1.0",
	FeatureAgentCompatibility:   "8.1.3",
	FeatureFractionalLimits:     "8.1.3",
}

// ServerVersion returns the version the Waldur server reports
// (GET /api/version/). A successful answer is cached for the client's life;
// a failed one is not, so a later call asks again.
func (c *Client) ServerVersion(ctx context.Context) (string, error) {
	c.compat.mu.Lock()
	defer c.compat.mu.Unlock()
	if c.compat.version != "" {
		return c.compat.version, nil
	}
	v, err := c.Version(ctx)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(v.Version) == "" {
		return "", fmt.Errorf("read waldur version: the answer has no version")
	}
	c.compat.version = v.Version
	return v.Version, nil
}

// Supports reports whether the server has feature. A feature no newer than
// OldestSupportedVersion is always supported, without asking the server. For
// a newer one the server's version decides; when the server is older, or its
// version cannot be read or parsed (Waldur answers /api/version/ to staff and
// support users only), the feature is not used: Supports logs one line per
// feature and client saying why, and returns false. It never fails.
func (c *Client) Supports(ctx context.Context, feature Feature) bool {
	need, ok := FeatureVersions[feature]
	if !ok {
		c.skipOnce(feature, "waldur feature skipped: unknown feature", "feature", string(feature))
		return false
	}
	if compareVersions(parseVersion(need), parseVersion(OldestSupportedVersion)) <= 0 {
		return true
	}
	v, err := c.ServerVersion(ctx)
	if err != nil {
		c.skipOnce(feature, "waldur feature skipped: the server version cannot be read",
			"feature", string(feature), "needs", need, "error", err.Error())
		return false
	}
	have := parseVersion(v)
	if have == nil {
		c.skipOnce(feature, "waldur feature skipped: the server version is not a release number",
			"feature", string(feature), "needs", need, "server_version", v)
		return false
	}
	if compareVersions(have, parseVersion(need)) < 0 {
		c.skipOnce(feature, "waldur feature skipped: the server is older than the feature",
			"feature", string(feature), "needs", need, "server_version", v)
		return false
	}
	return true
}

// skipOnce logs msg the first time feature is skipped by this client.
func (c *Client) skipOnce(feature Feature, msg string, args ...any) {
	c.compat.mu.Lock()
	defer c.compat.mu.Unlock()
	if c.compat.logged == nil {
		c.compat.logged = map[Feature]bool{}
	}
	if c.compat.logged[feature] {
		return
	}
	c.compat.logged[feature] = true
	c.log.Info(msg, args...)
}

// compatState is the per-client cache of ServerVersion and Supports.
type compatState struct {
	mu      sync.Mutex
	version string
	logged  map[Feature]bool
}

// parseVersion reads the leading release numbers of a version such as
// "8.1.3", "v8.1.3" or "8.1.3-rc1" (major, minor, patch; missing parts are
// 0); nil when it does not start with a number.
func parseVersion(v string) []int {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	end := strings.IndexFunc(v, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end >= 0 {
		v = v[:end]
	}
	parts := strings.Split(strings.Trim(v, "."), ".")
	out := make([]int, 3)
	for i, p := range parts {
		if i >= 3 {
			break
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil
		}
		out[i] = n
	}
	return out
}

func compareVersions(a, b []int) int { return slices.Compare(a, b) }
