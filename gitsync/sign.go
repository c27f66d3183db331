package gitsync

import (
	"bytes"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"golang.org/x/crypto/ssh"

	"github.com/waldur/waldur-gitops/config"
)

// Signer signs the encoded commit (without its signature header) and returns
// the armored signature git stores in the commit's gpgsig header. It has the
// shape of go-git's Signer.
type Signer interface {
	Sign(message io.Reader) ([]byte, error)
}

// LoadSigner reads a signing key file of type config.SigningSSH or
// config.SigningOpenPGP. Keys protected by a passphrase are refused.
func LoadSigner(file, typ string) (Signer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read git.signing_key_file: %w", err)
	}
	switch typ {
	case config.SigningSSH:
		return NewSSHSigner(b)
	case config.SigningOpenPGP:
		return NewOpenPGPSigner(b)
	}
	return nil, fmt.Errorf("unknown signing key type %q", typ)
}

// openPGPSigner makes detached, armored OpenPGP signatures, as `git commit -S`
// does with gpg.
type openPGPSigner struct{ entity *openpgp.Entity }

// NewOpenPGPSigner reads an OpenPGP private key, armored or binary.
func NewOpenPGPSigner(key []byte) (Signer, error) {
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(key))
	if err != nil {
		ring, err = openpgp.ReadKeyRing(bytes.NewReader(key))
	}
	if err != nil {
		return nil, fmt.Errorf("signing key: not an OpenPGP key: %w", err)
	}
	for _, e := range ring {
		if e.PrivateKey == nil {
			continue
		}
		if e.PrivateKey.Encrypted {
			return nil, errors.New("signing key: the OpenPGP key is protected by a passphrase, which is not supported")
		}
		return &openPGPSigner{entity: e}, nil
	}
	return nil, errors.New("signing key: the file holds no OpenPGP private key")
}

func (s *openPGPSigner) Sign(message io.Reader) ([]byte, error) {
	var b bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&b, s.entity, message, nil); err != nil {
		return nil, fmt.Errorf("sign commit: %w", err)
	}
	return b.Bytes(), nil
}

// sshSigner makes SSH signatures in the format of OpenSSH's PROTOCOL.sshsig
// with the namespace "git", which is what git writes with gpg.format=ssh and
// checks with `ssh-keygen -Y verify`.
type sshSigner struct{ signer ssh.Signer }

// NewSSHSigner reads an unencrypted OpenSSH or PEM private key.
func NewSSHSigner(key []byte) (Signer, error) {
	s, err := ssh.ParsePrivateKey(key)
	if err != nil {
		var missing *ssh.PassphraseMissingError
		if errors.As(err, &missing) {
			return nil, errors.New("signing key: the ssh key is protected by a passphrase, which is not supported")
		}
		return nil, fmt.Errorf("signing key: not an ssh private key: %w", err)
	}
	return &sshSigner{signer: s}, nil
}

const (
	sshsigMagic     = "SSHSIG"
	sshsigVersion   = 1
	sshsigNamespace = "git"
	sshsigHash      = "sha512"
)

// PublicKey returns the signer's public key in authorized_keys format, for an
// allowed-signers file.
func (s *sshSigner) PublicKey() string {
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.signer.PublicKey())))
}

func (s *sshSigner) Sign(message io.Reader) ([]byte, error) {
	h := sha512.New()
	if _, err := io.Copy(h, message); err != nil {
		return nil, fmt.Errorf("sign commit: %w", err)
	}
	// What is signed: the magic, then namespace, reserved, hash algorithm and
	// the message's hash, each as an SSH string.
	var signed bytes.Buffer
	signed.WriteString(sshsigMagic)
	for _, f := range [][]byte{[]byte(sshsigNamespace), nil, []byte(sshsigHash), h.Sum(nil)} {
		writeSSHString(&signed, f)
	}
	var sig *ssh.Signature
	var err error
	if as, ok := s.signer.(ssh.AlgorithmSigner); ok && s.signer.PublicKey().Type() == ssh.KeyAlgoRSA {
		// RSA keys must not sign with SHA-1, which ssh-keygen refuses.
		sig, err = as.SignWithAlgorithm(rand.Reader, signed.Bytes(), ssh.KeyAlgoRSASHA512)
	} else {
		sig, err = s.signer.Sign(rand.Reader, signed.Bytes())
	}
	if err != nil {
		return nil, fmt.Errorf("sign commit: %w", err)
	}
	var blob bytes.Buffer
	blob.WriteString(sshsigMagic)
	_ = binary.Write(&blob, binary.BigEndian, uint32(sshsigVersion))
	for _, f := range [][]byte{s.signer.PublicKey().Marshal(), []byte(sshsigNamespace), nil, []byte(sshsigHash), ssh.Marshal(sig)} {
		writeSSHString(&blob, f)
	}
	enc := base64.StdEncoding.EncodeToString(blob.Bytes())
	var out strings.Builder
	out.WriteString("-----BEGIN SSH SIGNATURE-----\n")
	for len(enc) > 70 {
		out.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	out.WriteString(enc + "\n-----END SSH SIGNATURE-----\n")
	return []byte(out.String()), nil
}

func writeSSHString(b *bytes.Buffer, s []byte) {
	_ = binary.Write(b, binary.BigEndian, uint32(len(s)))
	b.Write(s)
}
