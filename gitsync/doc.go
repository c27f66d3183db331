// Package gitsync will commit the rendered tree to a GitOps repository: one commit
// per run that changes something, none otherwise. Not implemented yet.
package gitsync

import _ "github.com/go-git/go-git/v5" // pinned ahead of the implementation
