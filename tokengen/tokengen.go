package tokengen

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"sync"
	"unsafe"
)

// Random makes tokens of 128 random bits, encoded as 22 URL-safe base64
// characters. The zero value is ready to use.
//
// The bits are keystream of AES-128 in counter mode (crypto/aes and
// crypto/cipher: a standard cryptographically strong generator, the
// construction of NIST's CTR_DRBG), each generator keyed with a key and a
// counter of 128 bits each from crypto/rand and keyed afresh every 65536
// tokens; goroutines draw from generators of their own (a sync.Pool),
// never from a shared one. Tokens are thus as unpredictable as
// crypto/rand's and, at 128 bits, unique across every process with
// overwhelming probability. A generator makes 32 tokens at a time,
// encoded into one string that the tokens share, so that a token costs
// no allocation of its own (a token keeps the 704 bytes of its batch
// alive), and a fraction of a token read from crypto/rand for each call
// (see BenchmarkRandom).
type Random struct{}

const (
	// reseedEvery is the number of tokens a generator makes before it is
	// seeded again from crypto/rand.
	reseedEvery = 1 << 16
	tokenLen    = 22 // base64 characters for 16 bytes, without padding
	batchSize   = 32 // tokens encoded at a time, at most
	batchBytes  = 1024
)

type generator struct {
	bits  cipher.Stream        // AES-CTR keystream
	raw   [batchSize * 16]byte // a batch's random bits
	left  int                  // tokens before the next reseed
	batch string               // tokens of tokenLen characters, each followed by a suffix
	next  int                  // offset in batch of the next token to hand out
}

func (g *generator) seed() {
	var seed [32]byte
	_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails (it crashes the program instead)
	block, err := aes.NewCipher(seed[:16])
	if err != nil {
		panic(err) // a 16-byte key is always valid
	}
	g.bits = cipher.NewCTR(block, seed[16:])
	g.left = reseedEvery
}

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// pairs holds the two characters of every 12 bits, little end first.
var pairs = func() (p [1 << 12]uint16) {
	for i := range p {
		p[i] = uint16(alphabet[i&63]) | uint16(alphabet[i>>6])<<8
	}
	return p
}()

// token returns the next token of the batch, each followed by suffix
// (the same for every call on g), filling a batch when it is used up.
func (g *generator) token(suffix string) string {
	size := tokenLen + len(suffix)
	if g.next == len(g.batch) {
		g.fill(suffix, size)
	}
	t := g.batch[g.next : g.next+size]
	g.next += size
	return t
}

// fill encodes the next batch of tokens, each 128 bits (twelve at a time,
// two characters per 12 bits) followed by suffix: batchSize of them, fewer
// when the suffix is long so that a batch stays near batchBytes.
func (g *generator) fill(suffix string, size int) {
	if g.left <= 0 {
		g.seed()
	}
	n := min(batchSize, max(1, batchBytes/size))
	raw := g.raw[:n*16]
	clear(raw)
	g.bits.XORKeyStream(raw, raw) // the keystream itself
	b := make([]byte, n*size)
	for t := b; len(t) > 0; t, raw = t[size:], raw[16:] {
		a, c := binary.LittleEndian.Uint64(raw), binary.LittleEndian.Uint64(raw[8:])
		// The 128 bits a, c in eleven 12-bit chunks, the last four bits 0.
		mid := a>>60 | c<<4 // chunk 5: a's last 4 bits and 8 of c
		c >>= 8             // c's other 56 bits: chunks 6 to 10
		binary.LittleEndian.PutUint64(t, chars4(a))
		binary.LittleEndian.PutUint64(t[8:], uint64(pairs[a>>48&mask])|uint64(pairs[mid&mask])<<16|chars2(c)<<32)
		binary.LittleEndian.PutUint32(t[16:], uint32(chars2(c>>24)))
		binary.LittleEndian.PutUint16(t[20:], pairs[c>>48&mask])
		copy(t[tokenLen:size], suffix)
	}
	// b is never written again: the string may share its bytes, as a
	// strings.Builder's does.
	g.batch, g.next = unsafe.String(unsafe.SliceData(b), len(b)), 0
	g.left -= n
}

const mask = 1<<12 - 1

// chars2 returns the four characters of x's low 24 bits.
func chars2(x uint64) uint64 { return uint64(pairs[x&mask]) | uint64(pairs[x>>12&mask])<<16 }

// chars4 returns the eight characters of x's low 48 bits.
func chars4(x uint64) uint64 { return chars2(x) | chars2(x>>24)<<32 }

var generators = sync.Pool{New: func() any { return new(generator) }}

// Token returns a new random token.
func (Random) Token() (string, error) {
	g := generators.Get().(*generator)
	t := g.token("")
	generators.Put(g)
	return t, nil
}

// Suffixed makes Random tokens followed by a suffix of the caller's: a
// locker with a holder name (lock.Options.Holder) makes its tokens with
// one, the suffix being "~" and the holder. The suffix is encoded into
// each batch with the tokens, so a token costs what a Random token costs:
// no allocation of its own. Batches are smaller when the suffix is long,
// so that a token keeps about a kilobyte alive at most. Create it with
// NewSuffixed (the zero value makes tokens without a suffix); it is safe
// for concurrent use and must not be copied after first use.
type Suffixed struct {
	suffix     string
	generators sync.Pool
}

// NewSuffixed returns a generator of Random tokens followed by suffix.
func NewSuffixed(suffix string) *Suffixed {
	s := &Suffixed{suffix: suffix}
	s.generators.New = func() any { return new(generator) }
	return s
}

// Token returns a new random token followed by the suffix.
func (s *Suffixed) Token() (string, error) {
	g, _ := s.generators.Get().(*generator)
	if g == nil { // the zero Suffixed's pool has no New
		g = new(generator)
	}
	t := g.token(s.suffix)
	s.generators.Put(g)
	return t, nil
}

// Fixed always returns the same token. Use it in tests, or to let a
// process recognise its own locks across restarts; it gives up the
// protection of unique tokens between clients that share it.
type Fixed string

// Token returns f, or an error if f is empty.
func (f Fixed) Token() (string, error) {
	if f == "" {
		return "", errors.New("tokengen: empty Fixed token")
	}
	return string(f), nil
}
