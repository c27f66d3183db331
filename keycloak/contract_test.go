package keycloak_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Nerzal/gocloak/v13"

	"github.com/waldur/waldur-gitops/internal/testenv/keycloaktest"
	"github.com/waldur/waldur-gitops/keycloak/kctest"
)

// ServiceRoles are the realm-management roles the service account of the
// contract test has, and the ones docs/keycloak.md tells a site to give
// waldur-gitops. Measured on Keycloak 26.7.3 (TestConformancePermissions):
// manage-users alone allows every call waldur-gitops makes, reads included;
// query-groups adds nothing beside it (alone it lists no group at all).
var ServiceRoles = []string{"manage-users"}

// TestContract runs the scenarios that need no fault injection against a real
// Keycloak (internal/testenv/keycloaktest starts one; -short skips), each in a
// realm of its own, created for it and deleted afterwards, where waldur-gitops
// logs in as a realm-scoped service account that has only ServiceRoles.
func TestContract(t *testing.T) {
	kc := realKC.Need(t)
	for _, sc := range scenarios {
		if sc.fakeOnly {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			k := newRealKeycloak(t, kc.URL, keycloaktest.AdminUser, kc.AdminPassword, keycloaktest.AdminRealm, ServiceRoles)
			sc.run(t, newEnv(t, k, nil))
		})
	}
}

// TestContractHarness runs the contract test's own setup code (realm,
// service account, users, groups, inspection through the admin API) against
// the fake, so that a failure of TestContract is known to be the server's.
func TestContractHarness(t *testing.T) {
	s := kctest.NewServer()
	defer s.Close()
	for _, sc := range scenarios {
		if sc.fakeOnly {
			continue
		}
		t.Run(sc.name, func(t *testing.T) {
			kc := newRealKeycloak(t, s.URL, kctest.AdminUser, kctest.AdminPassword, kctest.AdminRealm, ServiceRoles)
			sc.run(t, newEnv(t, kc, nil))
		})
	}
}

// realKeycloak is a realm of a Keycloak, set up through gocloak as an
// administrator of the master realm, with a confidential client whose service
// account waldur-gitops logs in as.
type realKeycloak struct {
	base, user, pw, loginRealm, realm string
	clientID, secret                  string
	gc                                *gocloak.GoCloak

	tok     string
	tokTill time.Time
}

func newRealKeycloak(t *testing.T, base, user, pw, loginRealm string, roles []string) *realKeycloak {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	k := &realKeycloak{base: strings.TrimRight(base, "/"), user: user, pw: pw, loginRealm: loginRealm,
		realm: "waldur-gitops-test-" + hex.EncodeToString(b[:]), clientID: "waldur-gitops", gc: gocloak.NewClient(base)}
	ctx := context.Background()
	if _, err := k.gc.CreateRealm(ctx, k.token(t), gocloak.RealmRepresentation{Realm: &k.realm, Enabled: gocloak.BoolP(true)}); err != nil {
		t.Fatalf("create realm %s: %v", k.realm, err)
	}
	t.Cleanup(func() {
		if err := k.gc.DeleteRealm(ctx, k.token(t), k.realm); err != nil {
			t.Errorf("delete realm %s: %v", k.realm, err)
		}
	})
	k.secret = ServiceAccount(t, k.gc, k.token(t), k.realm, k.clientID, roles)
	return k
}

// ServiceAccount makes, in realm, the confidential client clientID with a
// service account (client credentials grant only) that has the given roles of
// the realm's realm-management client, and returns its secret. It is the
// setup docs/keycloak.md describes, through the admin API.
func ServiceAccount(t *testing.T, gc *gocloak.GoCloak, tok, realm, clientID string, roles []string) string {
	t.Helper()
	ctx := context.Background()
	var b [16]byte
	_, _ = rand.Read(b[:])
	secret := hex.EncodeToString(b[:])
	id, err := gc.CreateClient(ctx, tok, realm, gocloak.Client{
		ClientID: &clientID, Enabled: gocloak.BoolP(true), PublicClient: gocloak.BoolP(false),
		ClientAuthenticatorType: gocloak.StringP("client-secret"), Secret: &secret,
		ServiceAccountsEnabled: gocloak.BoolP(true), StandardFlowEnabled: gocloak.BoolP(false),
		DirectAccessGrantsEnabled: gocloak.BoolP(false), ImplicitFlowEnabled: gocloak.BoolP(false),
	})
	if err != nil {
		t.Fatalf("create client %s in realm %s: %v", clientID, realm, err)
	}
	sa, err := gc.GetClientServiceAccount(ctx, tok, realm, id)
	if err != nil {
		t.Fatalf("service account of %s: %v", clientID, err)
	}
	rm, err := gc.GetClients(ctx, tok, realm, gocloak.GetClientsParams{ClientID: gocloak.StringP("realm-management")})
	if err != nil || len(rm) != 1 {
		t.Fatalf("realm-management client of %s: %v %v", realm, rm, err)
	}
	var grant []gocloak.Role
	for _, name := range roles {
		r, err := gc.GetClientRole(ctx, tok, realm, *rm[0].ID, name)
		if err != nil {
			t.Fatalf("realm-management role %s: %v", name, err)
		}
		grant = append(grant, *r)
	}
	if len(grant) > 0 {
		if err := gc.AddClientRolesToUser(ctx, tok, realm, *rm[0].ID, *sa.ID, grant); err != nil {
			t.Fatalf("grant %v to the service account of %s: %v", roles, clientID, err)
		}
	}
	return secret
}

// token is an admin token of the master realm, renewed at half its life.
func (k *realKeycloak) token(t *testing.T) string {
	t.Helper()
	if k.tok != "" && time.Now().Before(k.tokTill) {
		return k.tok
	}
	jwt, err := k.gc.LoginAdmin(context.Background(), k.user, k.pw, k.loginRealm)
	if err != nil {
		t.Fatalf("admin login: %v", err)
	}
	k.tok, k.tokTill = jwt.AccessToken, time.Now().Add(time.Duration(jwt.ExpiresIn)*time.Second/2)
	return k.tok
}

// ServiceAccount makes another client, with only roles, and returns its login keys.
func (k *realKeycloak) ServiceAccount(t *testing.T, roles ...string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	id := "restricted-" + hex.EncodeToString(b[:])
	secret := ServiceAccount(t, k.gc, k.token(t), k.realm, id, roles)
	return fmt.Sprintf("keycloak_user_realm: %q, client_id: %q, client_secret: %q", k.realm, id, secret)
}

func (k *realKeycloak) URL() string   { return k.base }
func (k *realKeycloak) Realm() string { return k.realm }

// Credentials log waldur-gitops in as the realm's service account.
func (k *realKeycloak) Credentials() string {
	return fmt.Sprintf("keycloak_user_realm: %q, client_id: %q, client_secret: %q", k.realm, k.clientID, k.secret)
}

func (k *realKeycloak) AddUser(t *testing.T, username string) string {
	t.Helper()
	id, err := k.gc.CreateUser(context.Background(), k.token(t), k.realm, gocloak.User{Username: &username, Enabled: gocloak.BoolP(true)})
	if err != nil {
		t.Fatalf("create user %s: %v", username, err)
	}
	return id
}

func (k *realKeycloak) groupID(t *testing.T, tok, path string) (string, bool) {
	t.Helper()
	// gocloak puts the path after ".../group-by-path/", so a leading "/"
	// would make "//", which Keycloak 26 refuses (400 missingNormalization).
	g, err := k.gc.GetGroupByPath(context.Background(), tok, k.realm, strings.TrimPrefix(path, "/"))
	if err != nil {
		if ae := (*gocloak.APIError)(nil); errors.As(err, &ae) && ae.Code == 404 {
			return "", false
		}
		t.Fatalf("group %s: %v", path, err)
	}
	return *g.ID, true
}

func (k *realKeycloak) AddGroup(t *testing.T, parentPath, name string, attrs map[string][]string) {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	g := gocloak.Group{Name: &name, Attributes: &attrs}
	var err error
	if parentPath == "" {
		_, err = k.gc.CreateGroup(ctx, tok, k.realm, g)
	} else {
		pid, ok := k.groupID(t, tok, parentPath)
		if !ok {
			t.Fatalf("no group %s", parentPath)
		}
		_, err = k.gc.CreateChildGroup(ctx, tok, k.realm, pid, g)
	}
	if err != nil {
		t.Fatalf("create group %s: %v", name, err)
	}
}

func (k *realKeycloak) AddMember(t *testing.T, path, username string) {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	us, err := k.gc.GetUsers(ctx, tok, k.realm, gocloak.GetUsersParams{Username: &username, Exact: gocloak.BoolP(true)})
	if err != nil || len(us) != 1 {
		t.Fatalf("user %s: %v %v", username, us, err)
	}
	gid, ok := k.groupID(t, tok, path)
	if !ok {
		t.Fatalf("no group %s", path)
	}
	if err := k.gc.AddUserToGroup(ctx, tok, k.realm, *us[0].ID, gid); err != nil {
		t.Fatal(err)
	}
}

func (k *realKeycloak) RemoveMember(t *testing.T, path, username string) {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	us, err := k.gc.GetUsers(ctx, tok, k.realm, gocloak.GetUsersParams{Username: &username, Exact: gocloak.BoolP(true)})
	if err != nil || len(us) != 1 {
		t.Fatalf("user %s: %v %v", username, us, err)
	}
	gid, ok := k.groupID(t, tok, path)
	if !ok {
		t.Fatalf("no group %s", path)
	}
	if err := k.gc.DeleteUserFromGroup(ctx, tok, k.realm, *us[0].ID, gid); err != nil {
		t.Fatal(err)
	}
}

func (k *realKeycloak) DeleteGroup(t *testing.T, path string) {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	gid, ok := k.groupID(t, tok, path)
	if !ok {
		t.Fatalf("no group %s", path)
	}
	if err := k.gc.DeleteGroup(ctx, tok, k.realm, gid); err != nil {
		t.Fatal(err)
	}
}

func (k *realKeycloak) SetAttributes(t *testing.T, path string, attrs map[string][]string) {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	gid, ok := k.groupID(t, tok, path)
	if !ok {
		t.Fatalf("no group %s", path)
	}
	g, err := k.gc.GetGroup(ctx, tok, k.realm, gid)
	if err != nil {
		t.Fatal(err)
	}
	g.Attributes = &attrs
	if err := k.gc.UpdateGroup(ctx, tok, k.realm, *g); err != nil {
		t.Fatal(err)
	}
}

func (k *realKeycloak) EnableAdminEvents(t *testing.T) {
	t.Helper()
	resp, err := k.gc.RestyClient().R().SetAuthToken(k.token(t)).SetBody(map[string]any{"adminEventsEnabled": true}).
		Put(k.base + "/admin/realms/" + k.realm)
	if err != nil || resp.IsError() {
		t.Fatalf("enable admin events: %v %s", err, resp.String())
	}
}

func (k *realKeycloak) Group(t *testing.T, path string) (kctest.GroupInfo, bool) {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	id, ok := k.groupID(t, tok, path)
	if !ok {
		return kctest.GroupInfo{}, false
	}
	g, err := k.gc.GetGroup(ctx, tok, k.realm, id)
	if err != nil {
		t.Fatal(err)
	}
	info := kctest.GroupInfo{ID: id, Attributes: map[string][]string{}, Members: []string{}, Children: []string{}}
	if g.Attributes != nil {
		info.Attributes = *g.Attributes
	}
	for first := 0; ; first += 100 {
		ms, err := k.gc.GetGroupMembers(ctx, tok, k.realm, id, gocloak.GetGroupsParams{First: gocloak.IntP(first), Max: gocloak.IntP(100)})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			info.Members = append(info.Members, *m.Username)
		}
		if len(ms) < 100 {
			break
		}
	}
	for _, c := range k.children(t, tok, id) {
		info.Children = append(info.Children, *c.Name)
	}
	slices.Sort(info.Members)
	slices.Sort(info.Children)
	return info, true
}

func (k *realKeycloak) children(t *testing.T, tok, id string) []*gocloak.Group {
	t.Helper()
	var all []*gocloak.Group
	for first := 0; ; first += 100 {
		var page []*gocloak.Group
		resp, err := k.gc.GetRequestWithBearerAuth(context.Background(), tok).SetResult(&page).
			SetQueryParams(map[string]string{"first": strconv.Itoa(first), "max": "100"}).
			Get(k.base + "/admin/realms/" + url.PathEscape(k.realm) + "/groups/" + id + "/children")
		if err != nil || resp.IsError() {
			t.Fatalf("children of %s: %v %v", id, resp, err)
		}
		all = append(all, page...)
		if len(page) < 100 {
			return all
		}
	}
}

func (k *realKeycloak) Paths(t *testing.T) []string {
	t.Helper()
	ctx, tok := context.Background(), k.token(t)
	var out []string
	var walk func(g *gocloak.Group, prefix string)
	walk = func(g *gocloak.Group, prefix string) {
		p := prefix + "/" + *g.Name
		out = append(out, p)
		for _, c := range k.children(t, tok, *g.ID) {
			walk(c, p)
		}
	}
	for first := 0; ; first += 100 {
		gs, err := k.gc.GetGroups(ctx, tok, k.realm, gocloak.GetGroupsParams{First: gocloak.IntP(first), Max: gocloak.IntP(100)})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range gs {
			walk(g, "")
		}
		if len(gs) < 100 {
			break
		}
	}
	slices.Sort(out)
	return out
}
