/** The part of sodium-native (libsodium's bindings) the body sealer calls; the package ships no types. */
declare module 'sodium-native' {
  /** Writes ciphertext and tag into `c` (m.length + 16 bytes); throws when libsodium refuses. */
  function crypto_aead_xchacha20poly1305_ietf_encrypt(c: Uint8Array, m: Uint8Array, ad: Uint8Array | null, nsec: null, npub: Uint8Array, k: Uint8Array): number;
  /** Writes the text of `c` into `m` (c.length - 16 bytes); throws when the tag does not verify. */
  function crypto_aead_xchacha20poly1305_ietf_decrypt(m: Uint8Array, nsec: null, c: Uint8Array, ad: Uint8Array | null, npub: Uint8Array, k: Uint8Array): number;
}
