/**
 * How task code reads `{"url": …}` references (ARCHITECTURE §4.10): the credentials for
 * `s3://bucket/key` and `gs://bucket/object`, and how long a read may go without a byte.
 * `https://` needs no credentials: it goes through the SSRF guard (src/outbound).
 */
export interface BucketCredentials {
  /** An S3-compatible endpoint (MinIO, R2…); absent: AWS S3 for `s3`, `https://storage.googleapis.com` for `gs`. */
  endpoint?: string;
  /** Default `us-east-1` for `s3`, `auto` for `gs`. */
  region?: string;
  access_key_id: string;
  secret_access_key: string;
  /** Path-style requests (`<endpoint>/<bucket>/<key>`). Default true when `endpoint` is given, and for `gs`. */
  force_path_style?: boolean;
}

/** The `storage_urls` option of the configuration. */
export interface StorageUrlsConfig {
  /** A read that receives no byte for this long fails (URL_READ_FAILED, retried). Default 30. */
  timeout_s?: number;
  /** Credentials for `s3://bucket/key`. */
  s3?: BucketCredentials;
  /** An HMAC key for Cloud Storage's S3-compatible XML API, for `gs://bucket/object`. */
  gs?: BucketCredentials;
}

/** The default of `storage_urls.timeout_s`. */
export const URL_READ_TIMEOUT_S = 30;

/** At most this many redirects are followed by an `https://` read, each checked again. */
export const URL_READ_MAX_REDIRECTS = 5;

/** The endpoint of Cloud Storage's S3-compatible (interoperability) XML API. */
export const GCS_INTEROP_ENDPOINT = "https://storage.googleapis.com";
