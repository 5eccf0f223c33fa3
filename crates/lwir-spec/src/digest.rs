//! SHA-256 as lwirc writes it: 64 lowercase hex digits, prefixed `sha256:` where it names a
//! version or a hash of a document (a WorkflowVersion, the manifest's hashes).

use sha2::{Digest, Sha256};

/// `bytes` as lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    text
}

/// The SHA-256 of `bytes` as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `sha256:` and the lowercase hex of what `hasher` was fed.
pub fn prefixed(hasher: Sha256) -> String {
    format!("sha256:{}", hex(&hasher.finalize()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_of_the_empty_input() {
        assert_eq!(
            super::sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(super::hex(&[0x00, 0xab, 0xff]), "00abff");
    }
}
