//! Numbers written so that they read back to the same bits: finite values as JSON
//! numbers (shortest round-trip form; the reader parses them exactly), the rest, which
//! JSON has no number for, by the names of [`nrpt_sampling::json`] (`"NaN"`, `"inf"`,
//! `"-inf"`), also when these records are written or read by another serializer than
//! nrpt's. For the records a shard of `nrpt deep` keeps, from which the merge rebuilds
//! the whole run's report to the byte (a diverged network scores NaN).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A number or the name of a non-finite one.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Number {
    Finite(f64),
    Named(String),
}

fn write(x: f64) -> Number {
    match nrpt_sampling::json::name(x) {
        None => Number::Finite(x),
        Some(n) => Number::Named(n.into()),
    }
}

fn read<E: serde::de::Error>(n: Number) -> Result<f64, E> {
    match n {
        Number::Finite(x) => Ok(x),
        Number::Named(s) => nrpt_sampling::json::named(&s)
            .ok_or_else(|| E::custom(format!("`{s}` is not a number"))),
    }
}

/// One number.
pub mod one {
    use super::*;

    /// Writes `x`.
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        write(*x).serialize(s)
    }

    /// Reads a number.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        read(Number::deserialize(d)?)
    }
}

/// An optional number (`null` when absent).
pub mod opt {
    use super::*;

    /// Writes `x`.
    pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        x.map(write).serialize(s)
    }

    /// Reads an optional number.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Option::<Number>::deserialize(d)?.map(read).transpose()
    }
}

/// A list of numbers.
pub mod list {
    use super::*;

    /// Writes `v`.
    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|&x| write(x)))
    }

    /// Reads a list of numbers.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Vec::<Number>::deserialize(d)?
            .into_iter()
            .map(read)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct T {
        #[serde(with = "super::list")]
        v: Vec<f64>,
        #[serde(with = "super::opt")]
        o: Option<f64>,
        #[serde(with = "super::one")]
        x: f64,
    }

    #[test]
    fn every_value_reads_back_to_its_bits() {
        let v = vec![
            0.1,
            -0.0,
            1.0 / 3.0,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            2.0,
        ];
        let t = T {
            v: v.clone(),
            o: Some(f64::NAN),
            x: -f64::INFINITY,
        };
        let text = serde_json::to_string(&t).unwrap();
        let back: T = serde_json::from_str(&text).unwrap();
        let bits = |v: &[f64]| -> Vec<u64> {
            v.iter()
                .map(|x| if x.is_nan() { 1 } else { x.to_bits() })
                .collect()
        };
        assert_eq!(bits(&back.v), bits(&v));
        assert!(back.o.unwrap().is_nan());
        assert_eq!(back.x, f64::NEG_INFINITY);
        let none: T = serde_json::from_str(r#"{"v":[],"o":null,"x":1}"#).unwrap();
        assert_eq!((none.o, none.x), (None, 1.0));
        assert!(serde_json::from_str::<T>(r#"{"v":["x"],"o":null,"x":1}"#).is_err());
    }
}
