package redisstore

import (
	"strconv"
	"strings"
	"sync"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Slot returns the cluster hash slot of key: CRC-16/XMODEM of its hash
// tag (the part between the first "{" and the next "}", if not empty) or
// of the whole key, modulo Slots.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % Slots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021), as Redis Cluster uses.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// counterKeys holds the fence counter key of every slot, found once: for
// each slot, the key FenceKey + ":{t}" with the shortest tag t (a number
// in base 36) that hashes to it.
var counterKeys = sync.OnceValue(func() *[Slots]string {
	var keys [Slots]string
	for n, left := 0, Slots; left > 0; n++ {
		tag := strconv.FormatInt(int64(n), 36)
		if s := crc16(tag) % Slots; keys[s] == "" {
			keys[s] = FenceKey + ":{" + tag + "}"
			left--
		}
	}
	return &keys
})

// CounterKey returns the key of the fence counter for the lock at
// lockKey: FenceKey on a single server, and on a cluster the counter of
// the lock's slot, so that the lock and its counter are on one node.
func CounterKey(lockKey string, cluster bool) string {
	if !cluster {
		return FenceKey
	}
	return counterKeys()[Slot(lockKey)]
}
