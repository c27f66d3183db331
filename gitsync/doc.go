// Package gitsync commits the rendered tree to a GitOps repository: one commit
// per run that changes something, none otherwise.
//
// The stage boundary is the Writer interface (fetch the branch tip, read the
// owned subtree, commit a new subtree, push); Repo implements it with go-git
// against https, ssh or local repositories. Sync runs the cycle and retries it
// on a new tip when another writer won the race for the branch.
//
// Nothing here scales with a worktree: there is none. The branch tip is fetched
// shallowly into memory, the subtree at git.path is read from its tree objects,
// the new subtree is built as blob and tree objects (unchanged files keep the
// hashes they had, directories outside git.path keep their trees), and an
// unchanged tree is detected by comparing one root hash. A push sends exactly
// the objects the run created, with the fetched tip as the expected old value of
// the branch, so the server refuses it if anyone moved the branch meanwhile:
// nothing is ever force-pushed.
package gitsync
