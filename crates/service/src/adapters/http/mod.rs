//! The [`HttpClient`] port over `reqwest`, with an outbound address policy.
//!
//! Jobs call URLs that users wrote, from inside our network. Without a policy, a job pointed at
//! `http://169.254.169.254/…` reads the cloud instance's credentials, one pointed at
//! `http://10.0.0.5/admin` reaches services never meant to be public, and on Lambda one pointed at
//! the runtime API could answer another invocation. So every call is checked against an
//! [`AddressPolicy`], and the check is made where it cannot be dodged:
//!
//! * on the **resolved** addresses, not the host name as written: a custom [`Resolve`] looks names
//!   up and hands the connector only the addresses the policy allows, so a DNS name pointing at
//!   `127.0.0.1` is refused, and since the connector only ever dials what the resolver returned,
//!   a name that changes its answer between a check and the connect (DNS rebinding) cannot slip
//!   through either;
//! * on IP literals directly, before anything is sent (the connector skips the resolver for them);
//! * **redirects are not followed** (a public URL could redirect to a private one): a 3xx is
//!   returned as the response, like any other status;
//! * **proxies from the environment are ignored**, since through a proxy the resolver would only
//!   ever see the proxy's name.
//!
//! Each call is bounded by its own time limit and the body is read chunk by chunk, never keeping
//! more than [`MAX_RESPONSE_BYTES`]. One `reqwest::Client` is built once and shared, so connections
//! are pooled across calls.

use std::error::Error as StdError;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Method, Url};
use sundial_core::address::{self, Class};

use sundial_ports::http::{HttpClient, HttpError, HttpRequest, HttpResponse, MAX_RESPONSE_BYTES};

/// The `User-Agent` of every outbound call (a request may still set its own).
pub const USER_AGENT: &str = concat!("sundial/", env!("CARGO_PKG_VERSION"));

/// The environment variable through which Lambda tells a function where its runtime API is
/// (`host:port`).
pub const LAMBDA_RUNTIME_API_ENV: &str = "AWS_LAMBDA_RUNTIME_API";

/// Which addresses outbound calls may reach.
///
/// Refused unless allowed: every special-purpose range of the IANA registries, multicast and
/// reserved addresses ([`sundial_core::address`]), among them link-local addresses
/// (`169.254.0.0/16`, `fe80::/10`, which hold the cloud metadata, ECS and Lambda credential
/// endpoints), and always the Lambda runtime API. The flags open loopback and private ranges;
/// `allow_hosts` opens anything it names. IPv6 forms of IPv4 addresses (`::ffff:a.b.c.d`,
/// `::a.b.c.d`, `64:ff9b::a.b.c.d`) are judged by the IPv4 address; 6to4 and Teredo are refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressPolicy {
    /// Allow `127.0.0.0/8` and `::1` (the machine itself).
    pub allow_loopback: bool,
    /// Allow private ranges: `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`, `100.64.0.0/10`
    /// (carrier-grade NAT), `fc00::/7` (unique local, which holds AWS's IPv6 metadata address
    /// `fd00:ec2::254`) and the deprecated site-local `fec0::/10`.
    pub allow_private: bool,
    /// Entries always allowed, whatever their class: an exact host name as written in URLs
    /// (`localhost`, `api.internal`; case and a trailing dot are ignored, and every address the
    /// name resolves to is allowed), an IP address (`10.1.2.3`, `::1`) or a CIDR block
    /// (`10.1.0.0/16`, `fd00::/8`). Only the Lambda runtime API stays refused.
    pub allow_hosts: Vec<String>,
}

impl AddressPolicy {
    /// For `sundial serve` on a developer's machine: jobs may call services on the same machine,
    /// but not the private network around it.
    pub fn local() -> Self {
        AddressPolicy {
            allow_loopback: true,
            allow_private: false,
            allow_hosts: Vec::new(),
        }
    }

    /// For the AWS deployment: public addresses only.
    pub fn aws() -> Self {
        AddressPolicy {
            allow_loopback: false,
            ..AddressPolicy::local()
        }
    }
}

/// One parsed `allow_hosts` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Allow {
    Host(String),
    Net { addr: IpAddr, prefix: u8 },
}

impl Allow {
    fn parse(entry: &str) -> Result<Allow, String> {
        let trimmed = entry.trim();
        if let Some((addr, prefix)) = trimmed.split_once('/') {
            let addr: IpAddr = unbracket(addr).parse().map_err(|_| {
                format!("allow_hosts entry {entry:?}: {addr:?} is not an IP address")
            })?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            return match prefix.parse::<u8>() {
                // Only the canonical spelling, so `/08` or `/+8` are taken for the typos they are.
                Ok(bits) if bits <= max && bits.to_string() == prefix => {
                    Ok(Allow::Net { addr, prefix: bits })
                }
                _ => Err(format!(
                    "allow_hosts entry {entry:?}: the prefix length must be 0 to {max}"
                )),
            };
        }
        if let Ok(addr) = unbracket(trimmed).parse::<IpAddr>() {
            let prefix = if addr.is_ipv4() { 32 } else { 128 };
            return Ok(Allow::Net { addr, prefix });
        }
        let host = normalize_host(trimmed);
        if host.is_empty() || host.contains(|c: char| c.is_whitespace() || "/:@[]".contains(c)) {
            return Err(format!(
                "allow_hosts entry {entry:?} is not a host name, an IP address or a CIDR block"
            ));
        }
        Ok(Allow::Host(host))
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let Allow::Net { addr, prefix } = *self else {
            return false;
        };
        // A v4 block also covers the IPv6 forms of its addresses (`::ffff:a.b.c.d`, …).
        let translated = match ip {
            IpAddr::V6(v6) => address::translated_ipv4(v6).map(IpAddr::V4),
            IpAddr::V4(_) => None,
        };
        [Some(ip), translated]
            .into_iter()
            .flatten()
            .any(|ip| match (addr, ip) {
                (IpAddr::V4(net), IpAddr::V4(ip)) => {
                    let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
                    u32::from(net) & mask == u32::from(ip) & mask
                }
                (IpAddr::V6(net), IpAddr::V6(ip)) => {
                    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
                    u128::from(net) & mask == u128::from(ip) & mask
                }
                _ => false,
            })
    }
}

fn unbracket(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(host)
}

/// A host name as compared: lower case, without the trailing dot of a fully-qualified name.
fn normalize_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// The `allow_hosts` entries that parse; [`ReqwestClient::new`] rejects a policy with others.
fn parse_allow_lenient(policy: &AddressPolicy) -> Vec<Allow> {
    policy
        .allow_hosts
        .iter()
        .filter_map(|entry| Allow::parse(entry).ok())
        .collect()
}

fn refusal(ip: IpAddr, policy: &AddressPolicy, allow: &[Allow]) -> Option<&'static str> {
    if allow.iter().any(|entry| entry.contains(ip)) {
        return None;
    }
    let refusal = address::classify(ip)?;
    match refusal.class {
        Class::Loopback if policy.allow_loopback => None,
        Class::Private if policy.allow_private => None,
        _ => Some(refusal.reason),
    }
}

/// Why `policy` refuses `ip` (`"loopback (127.0.0.0/8)"`, `"benchmarking (198.18.0.0/15)"`, …; see
/// [`sundial_core::address`]), or `None` if it may be called.
///
/// IP and CIDR entries of `allow_hosts` are honoured (an entry that does not parse matches
/// nothing); host-name entries are not, since only an address is known here. The Lambda runtime
/// API is checked by the client, not here.
pub fn is_refused(ip: IpAddr, policy: &AddressPolicy) -> Option<&'static str> {
    refusal(ip, policy, &parse_allow_lenient(policy))
}

/// The Lambda runtime API's host, from the `host:port` in [`LAMBDA_RUNTIME_API_ENV`].
#[derive(Clone, Debug, PartialEq, Eq)]
struct RuntimeApi {
    host: String,
    ip: Option<IpAddr>,
}

impl RuntimeApi {
    fn parse(value: &str) -> Option<RuntimeApi> {
        let value = value.trim();
        let host = if let Some(rest) = value.strip_prefix('[') {
            rest.split(']').next().unwrap_or(rest)
        } else if value.matches(':').count() == 1 {
            value.split(':').next().unwrap_or(value)
        } else {
            value
        };
        let host = normalize_host(host);
        if host.is_empty() {
            return None;
        }
        let ip = host.parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
        Some(RuntimeApi { host, ip })
    }
}

/// The policy as the client applies it: parsed once, shared with the resolver.
#[derive(Debug)]
struct Guard {
    policy: AddressPolicy,
    allow: Vec<Allow>,
    runtime_api: Option<RuntimeApi>,
}

impl Guard {
    fn new(policy: AddressPolicy, runtime_api: Option<&str>) -> Result<Guard, String> {
        let allow = policy
            .allow_hosts
            .iter()
            .map(|entry| Allow::parse(entry))
            .collect::<Result<_, _>>()?;
        Ok(Guard {
            policy,
            allow,
            runtime_api: runtime_api.and_then(RuntimeApi::parse),
        })
    }

    /// Refuses a host name before it is looked up (only the runtime API is refused by name).
    fn check_host(&self, host: &str) -> Result<(), String> {
        match &self.runtime_api {
            Some(api) if api.host == normalize_host(host) => {
                Err(format!("{host} is the Lambda runtime API"))
            }
            _ => Ok(()),
        }
    }

    /// True if `allow_hosts` names `host` itself.
    fn host_listed(&self, host: &str) -> bool {
        let host = normalize_host(host);
        self.allow
            .iter()
            .any(|entry| matches!(entry, Allow::Host(listed) if *listed == host))
    }

    /// Refuses an address, unless its host name is listed (`host_listed`); the runtime API is
    /// refused even then.
    fn check_ip(&self, ip: IpAddr, host_listed: bool) -> Result<(), String> {
        if let Some(api) = &self.runtime_api {
            if api.ip == Some(ip.to_canonical()) {
                return Err(format!("{ip} is the Lambda runtime API"));
            }
        }
        if host_listed {
            return Ok(());
        }
        match refusal(ip, &self.policy, &self.allow) {
            Some(reason) => Err(format!("{ip} is {reason}")),
            None => Ok(()),
        }
    }
}

/// The error the resolver fails with when a name resolves only to refused addresses; found again
/// in the `reqwest` error's source chain and turned into [`HttpError::Refused`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RefusedAddress(String);

/// Resolves with the system resolver (`tokio::net::lookup_host`) and keeps only the addresses the
/// policy allows.
#[derive(Debug)]
struct PolicyResolver {
    guard: Arc<Guard>,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = Arc::clone(&self.guard);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            guard.check_host(&host).map_err(RefusedAddress)?;
            let listed = guard.host_listed(&host);
            let mut kept = Vec::new();
            let mut refused = Vec::new();
            for addr in tokio::net::lookup_host((host.as_str(), 0)).await? {
                match guard.check_ip(addr.ip(), listed) {
                    Ok(()) => kept.push(addr),
                    Err(reason) => refused.push(reason),
                }
            }
            if kept.is_empty() {
                if refused.is_empty() {
                    return Err(format!("{host} resolved to no addresses").into());
                }
                return Err(RefusedAddress(format!(
                    "{host} resolves only to refused addresses ({})",
                    refused.join(", ")
                ))
                .into());
            }
            let addrs: Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

/// The [`HttpClient`] used in production: `reqwest` over rustls, with an [`AddressPolicy`].
#[derive(Clone, Debug)]
pub struct ReqwestClient {
    client: reqwest::Client,
    guard: Arc<Guard>,
}

impl ReqwestClient {
    /// Builds the client once: a pooled `reqwest::Client` that follows no redirects, uses no
    /// proxy, sends [`USER_AGENT`] and resolves names through `policy`. The Lambda runtime API's
    /// address is read from [`LAMBDA_RUNTIME_API_ENV`] now, if set, and refused from then on.
    ///
    /// Fails if an `allow_hosts` entry is malformed or the TLS backend cannot start.
    pub fn new(policy: AddressPolicy) -> Result<Self, String> {
        let runtime_api = std::env::var(LAMBDA_RUNTIME_API_ENV).ok();
        ReqwestClient::build(policy, runtime_api.as_deref())
    }

    fn build(policy: AddressPolicy, runtime_api: Option<&str>) -> Result<Self, String> {
        let guard = Arc::new(Guard::new(policy, runtime_api)?);
        let client = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(PolicyResolver {
                guard: Arc::clone(&guard),
            }))
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {}", describe(&e)))?;
        Ok(ReqwestClient { client, guard })
    }

    /// Checks what can be checked before sending: the scheme, and the host if it is an IP literal
    /// (names are checked by the resolver, after lookup).
    fn check_url(&self, url: &str) -> Result<Url, HttpError> {
        let url = Url::parse(url).map_err(|e| HttpError::InvalidUrl(format!("{url:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpError::InvalidUrl(format!(
                "scheme {:?} is not allowed; use http or https",
                url.scheme()
            )));
        }
        let host = url
            .host_str()
            .filter(|host| !host.is_empty())
            .ok_or_else(|| HttpError::InvalidUrl("the URL has no host".to_owned()))?;
        match unbracket(host).parse::<IpAddr>() {
            Ok(ip) => self.guard.check_ip(ip, false),
            Err(_) => self.guard.check_host(host),
        }
        .map_err(HttpError::Refused)?;
        Ok(url)
    }

    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let url = self.check_url(&request.url)?;
        let method = Method::from_bytes(request.method.as_bytes())
            .map_err(|_| HttpError::Transport(format!("invalid method {:?}", request.method)))?;
        let mut builder = self.client.request(method, url).timeout(request.timeout);
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        if let Some(body) = request.body {
            builder = builder.body(body);
        }
        let mut response = builder.send().await.map_err(map_error)?;
        let status = response.status().as_u16();
        if response
            .content_length()
            .is_some_and(|length| length > MAX_RESPONSE_BYTES as u64)
        {
            return Err(HttpError::BodyTooLarge);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(map_error)? {
            if chunk.len() > MAX_RESPONSE_BYTES - body.len() {
                return Err(HttpError::BodyTooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        Ok(HttpResponse { status, body })
    }
}

impl HttpClient for ReqwestClient {
    async fn send(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        // reqwest's own timeout covers the same span; this one also bounds our body loop.
        let limit = request.timeout;
        tokio::time::timeout(limit, self.call(request))
            .await
            .unwrap_or(Err(HttpError::Timeout))
    }
}

/// Maps a `reqwest` error: a refusal from the resolver, a timeout, or anything else as transport.
fn map_error(error: reqwest::Error) -> HttpError {
    let error = error.without_url();
    let mut source: Option<&(dyn StdError + 'static)> = Some(&error);
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<RefusedAddress>() {
            return HttpError::Refused(refused.0.clone());
        }
        source = current.source();
    }
    if error.is_timeout() {
        return HttpError::Timeout;
    }
    HttpError::Transport(describe(&error))
}

/// An error and its sources, `: `-separated (reqwest's own message rarely says what failed).
fn describe(error: &(dyn StdError + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(current) = source {
        let text = current.to_string();
        if !message.ends_with(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = current.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        match text.parse() {
            Ok(ip) => ip,
            Err(e) => panic!("{text}: {e}"),
        }
    }

    fn policy(allow_loopback: bool, allow_private: bool, allow_hosts: &[&str]) -> AddressPolicy {
        AddressPolicy {
            allow_loopback,
            allow_private,
            allow_hosts: allow_hosts.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    // How each reason starts (the rest names the range).
    const LOOPBACK: Option<&str> = Some("loopback (");
    const PRIVATE: Option<&str> = Some("a private address (");
    const LINK_LOCAL: Option<&str> = Some("link-local (");
    const UNSPECIFIED: Option<&str> = Some("unspecified (");
    const MULTICAST: Option<&str> = Some("multicast (");
    const BROADCAST: Option<&str> = Some("broadcast (");
    const RESERVED: Option<&str> = Some("reserved (");
    const DOCUMENTATION: Option<&str> = Some("documentation (");
    const BENCHMARKING: Option<&str> = Some("benchmarking (");
    const SIX_TO_FOUR: Option<&str> = Some("6to4 (");
    const TRANSLATION: Option<&str> = Some("the local-use IPv4/IPv6 translation prefix (");
    const PCP: Option<&str> = Some("the Port Control Protocol anycast address (");

    /// Every address against the strictest policy (`aws`), with the reason. The whole table of
    /// special-purpose ranges is tested in `sundial_core::address`; these are the addresses the
    /// hardening probe (issue 12) and earlier reviews tried.
    #[test]
    fn classification_under_the_aws_policy() {
        let cases: &[(&str, Option<&str>)] = &[
            // Public.
            ("1.1.1.1", None),
            ("8.8.8.8", None),
            ("93.184.216.34", None),
            ("9.255.255.255", None),
            ("11.0.0.0", None),
            ("100.63.255.255", None),
            ("100.128.0.0", None),
            ("126.255.255.255", None),
            ("128.0.0.0", None),
            ("169.253.255.255", None),
            ("169.255.0.0", None),
            ("172.15.255.255", None),
            ("172.32.0.0", None),
            ("192.167.255.255", None),
            ("192.169.0.0", None),
            ("223.255.255.255", None),
            ("2606:4700:4700::1111", None),
            ("2001:db8::1", DOCUMENTATION),
            ("192.0.2.1", DOCUMENTATION),
            ("198.18.0.1", BENCHMARKING),
            ("192.0.0.9", PCP),
            ("::169.254.169.254", LINK_LOCAL),
            ("2002:a9fe:a9fe::1", SIX_TO_FOUR),
            ("64:ff9b:1::a9fe:a9fe", TRANSLATION),
            ("::ffff:0:a9fe:a9fe", LINK_LOCAL),
            ("fbff:ffff::1", None),
            ("fe00::1", None),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::808:808", None),
            // Loopback.
            ("127.0.0.1", LOOPBACK),
            ("127.255.255.254", LOOPBACK),
            ("127.1.2.3", LOOPBACK),
            ("::1", LOOPBACK),
            ("::ffff:127.0.0.1", LOOPBACK),
            // Private.
            ("10.0.0.1", PRIVATE),
            ("10.255.255.255", PRIVATE),
            ("172.16.0.1", PRIVATE),
            ("172.31.255.255", PRIVATE),
            ("192.168.0.1", PRIVATE),
            ("192.168.255.255", PRIVATE),
            ("100.64.0.1", PRIVATE),
            ("100.100.100.200", PRIVATE), // Alibaba Cloud metadata
            ("100.127.255.255", PRIVATE),
            ("fc00::1", PRIVATE),
            ("fd00:ec2::254", PRIVATE), // AWS metadata over IPv6
            ("fdff:ffff::1", PRIVATE),
            ("fec0::1", PRIVATE),
            ("::ffff:10.0.0.1", PRIVATE),
            ("::ffff:192.168.1.1", PRIVATE),
            ("64:ff9b::a00:1", PRIVATE),
            // Link-local, including metadata endpoints.
            ("169.254.169.254", LINK_LOCAL), // EC2/GCP/Azure metadata
            ("169.254.170.2", LINK_LOCAL),   // ECS task credentials
            ("169.254.100.1", LINK_LOCAL),
            ("169.254.0.0", LINK_LOCAL),
            ("169.254.255.255", LINK_LOCAL),
            ("fe80::1", LINK_LOCAL),
            ("febf:ffff::1", LINK_LOCAL),
            ("::ffff:169.254.169.254", LINK_LOCAL),
            ("::ffff:a9fe:a9fe", LINK_LOCAL),
            ("64:ff9b::a9fe:a9fe", LINK_LOCAL),
            // Unspecified.
            ("0.0.0.0", UNSPECIFIED),
            ("0.1.2.3", UNSPECIFIED),
            ("::", UNSPECIFIED),
            ("::ffff:0.0.0.0", UNSPECIFIED),
            // Multicast, broadcast, reserved.
            ("224.0.0.1", MULTICAST),
            ("239.255.255.255", MULTICAST),
            ("ff02::1", MULTICAST),
            ("ff0e::1", MULTICAST),
            ("::ffff:224.0.0.251", MULTICAST),
            ("255.255.255.255", BROADCAST),
            ("::ffff:255.255.255.255", BROADCAST),
            ("240.0.0.1", RESERVED),
            ("255.255.255.254", RESERVED),
        ];
        let aws = AddressPolicy::aws();
        for (address, expected) in cases {
            let refused = is_refused(ip(address), &aws);
            match (refused, expected) {
                (None, None) => {}
                (Some(reason), Some(start)) if reason.starts_with(start) => {}
                _ => panic!("{address}: {refused:?}, expected {expected:?}"),
            }
        }
    }

    /// What each flag opens, and what no flag opens.
    #[test]
    fn flags_open_only_their_class() {
        let addresses = [
            "8.8.8.8",
            "127.0.0.1",
            "::1",
            "::ffff:127.0.0.1",
            "10.0.0.1",
            "fd00::1",
            "::ffff:172.16.0.1",
            "169.254.169.254",
            "fe80::1",
            "0.0.0.0",
            "::",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
        ];
        let open: &[(&str, AddressPolicy, &[&str])] = &[
            ("aws", AddressPolicy::aws(), &["8.8.8.8"]),
            (
                "local",
                AddressPolicy::local(),
                &["8.8.8.8", "127.0.0.1", "::1", "::ffff:127.0.0.1"],
            ),
            (
                "private only",
                policy(false, true, &[]),
                &["8.8.8.8", "10.0.0.1", "fd00::1", "::ffff:172.16.0.1"],
            ),
            (
                "both",
                policy(true, true, &[]),
                &[
                    "8.8.8.8",
                    "127.0.0.1",
                    "::1",
                    "::ffff:127.0.0.1",
                    "10.0.0.1",
                    "fd00::1",
                    "::ffff:172.16.0.1",
                ],
            ),
        ];
        for (name, policy, allowed) in open {
            for address in addresses {
                assert_eq!(
                    is_refused(ip(address), policy).is_none(),
                    allowed.contains(&address),
                    "{name}: {address}"
                );
            }
        }
    }

    #[test]
    fn allow_hosts_entries_open_addresses() {
        let cases: &[(&[&str], &str, bool)] = &[
            (&["127.0.0.1"], "127.0.0.1", true),
            (&["127.0.0.1"], "127.0.0.2", false),
            (&["127.0.0.1"], "::ffff:127.0.0.1", true),
            (&["127.0.0.0/8"], "127.9.9.9", true),
            (&["10.1.0.0/16"], "10.1.255.1", true),
            (&["10.1.0.0/16"], "10.2.0.1", false),
            (&["10.1.2.3/16"], "10.1.0.1", true), // host bits are ignored
            (&["0.0.0.0/0"], "169.254.169.254", true),
            (&["0.0.0.0/0"], "fe80::1", false),
            (&["169.254.169.254/32"], "169.254.169.254", true),
            (&["::1"], "::1", true),
            (&["[::1]"], "::1", true),
            (&["::1"], "127.0.0.1", false),
            (&["fd00::/8"], "fd00:ec2::254", true),
            (&["fd00::/8"], "fc00::1", false),
            (&["::/0"], "fe80::1", true),
            (&["::ffff:0:0/96"], "::ffff:10.0.0.1", true),
            (&[" 10.0.0.1 "], "10.0.0.1", true),
            // Names are matched by the resolver, not here; broken entries match nothing.
            (&["localhost"], "127.0.0.1", false),
            (&["10.0.0.0/33"], "10.0.0.1", false),
            (&["10.0.0.0/x"], "10.0.0.1", false),
            (&["other", "10.0.0.1"], "10.0.0.1", true),
        ];
        for (entries, address, allowed) in cases {
            assert_eq!(
                is_refused(ip(address), &policy(false, false, entries)).is_none(),
                *allowed,
                "{entries:?} {address}"
            );
        }
    }

    #[test]
    fn allow_entries_parse() {
        let net = |addr: &str, prefix| {
            Ok(Allow::Net {
                addr: ip(addr),
                prefix,
            })
        };
        let cases: &[(&str, Result<Allow, ()>)] = &[
            ("localhost", Ok(Allow::Host("localhost".to_owned()))),
            (
                "API.Example.COM.",
                Ok(Allow::Host("api.example.com".to_owned())),
            ),
            ("10.0.0.1", net("10.0.0.1", 32)),
            ("::1", net("::1", 128)),
            ("[fd00::1]", net("fd00::1", 128)),
            ("10.0.0.0/8", net("10.0.0.0", 8)),
            ("0.0.0.0/0", net("0.0.0.0", 0)),
            ("fd00::/8", net("fd00::", 8)),
            ("[fd00::]/8", net("fd00::", 8)),
            ("10.0.0.0/33", Err(())),
            ("fd00::/129", Err(())),
            ("10.0.0.0/", Err(())),
            ("10.0.0.0/08", Err(())),
            ("10.0.0.0/+8", Err(())),
            ("host/8", Err(())),
            ("", Err(())),
            ("  ", Err(())),
            ("host:80", Err(())),
            ("user@host", Err(())),
            ("two words", Err(())),
        ];
        for (entry, expected) in cases {
            assert_eq!(Allow::parse(entry).map_err(|_| ()), *expected, "{entry:?}");
        }
        assert!(ReqwestClient::build(policy(false, false, &["10.0.0.0/33"]), None).is_err());
    }

    #[test]
    fn runtime_api_values_parse() {
        // (value, Some((host, address)) or None)
        type Case<'a> = (&'a str, Option<(&'a str, Option<&'a str>)>);
        let cases: &[Case<'_>] = &[
            ("127.0.0.1:9001", Some(("127.0.0.1", Some("127.0.0.1")))),
            (
                "169.254.100.1:9001",
                Some(("169.254.100.1", Some("169.254.100.1"))),
            ),
            ("localhost:9001", Some(("localhost", None))),
            ("Runtime.Local", Some(("runtime.local", None))),
            ("[::1]:9001", Some(("::1", Some("::1")))),
            (
                "[::ffff:127.0.0.1]:9001",
                Some(("::ffff:127.0.0.1", Some("127.0.0.1"))),
            ),
            ("::1", Some(("::1", Some("::1")))),
            ("", None),
            (":9001", None),
        ];
        for (value, expected) in cases {
            let expected = expected.map(|(host, address)| RuntimeApi {
                host: host.to_owned(),
                ip: address.map(ip),
            });
            assert_eq!(RuntimeApi::parse(value), expected, "{value:?}");
        }
    }

    #[test]
    fn the_runtime_api_is_refused_even_when_allowed() {
        let open = policy(true, true, &["127.0.0.1", "localhost", "runtime.local"]);
        let by_ip = Guard::new(open.clone(), Some("127.0.0.1:9001"));
        let by_name = Guard::new(open, Some("runtime.local:9001"));
        let (Ok(by_ip), Ok(by_name)) = (by_ip, by_name) else {
            panic!("valid policies");
        };
        assert!(by_ip.check_ip(ip("127.0.0.1"), false).is_err());
        assert!(by_ip.check_ip(ip("127.0.0.1"), true).is_err());
        assert!(by_ip.check_ip(ip("::ffff:127.0.0.1"), true).is_err());
        assert!(by_ip.check_ip(ip("127.0.0.2"), false).is_ok());
        assert!(by_ip.check_host("localhost").is_ok());
        assert!(by_name.check_host("runtime.local").is_err());
        assert!(by_name.check_host("RUNTIME.local.").is_err());
        assert!(by_name.check_host("other.local").is_ok());
        assert!(by_name.check_ip(ip("127.0.0.1"), false).is_ok());
    }

    #[test]
    fn listed_host_names_open_every_address_they_resolve_to() {
        let Ok(guard) = Guard::new(policy(false, false, &["Internal.Example."]), None) else {
            panic!("valid policy");
        };
        assert!(guard.host_listed("internal.example"));
        assert!(guard.host_listed("INTERNAL.example."));
        assert!(!guard.host_listed("example"));
        assert!(guard.check_ip(ip("10.0.0.1"), true).is_ok());
        assert!(guard.check_ip(ip("169.254.169.254"), true).is_ok());
        assert!(guard.check_ip(ip("10.0.0.1"), false).is_err());
    }

    #[test]
    fn urls_are_checked_before_sending() {
        let Ok(client) = ReqwestClient::build(AddressPolicy::aws(), Some("runtime.local:9001"))
        else {
            panic!("client builds");
        };
        let invalid = |url: &str| matches!(client.check_url(url), Err(HttpError::InvalidUrl(_)));
        let refused = |url: &str| matches!(client.check_url(url), Err(HttpError::Refused(_)));
        assert!(invalid("ftp://example.com/"));
        assert!(invalid("file:///etc/passwd"));
        assert!(invalid("gopher://example.com/"));
        assert!(invalid("example.com/path"));
        assert!(invalid("http://"));
        assert!(invalid(""));
        assert!(refused("http://127.0.0.1:8080/"));
        assert!(refused("http://[::1]/"));
        assert!(refused("http://[::ffff:169.254.169.254]/latest/meta-data/"));
        assert!(refused("http://[::169.254.169.254]/latest/meta-data/"));
        assert!(refused("http://[2002:a9fe:a9fe::1]/"));
        assert!(refused("http://198.18.0.1/"));
        assert!(refused("http://192.0.0.9/"));
        assert!(refused("http://2852039166/")); // 169.254.169.254 as one number
        assert!(refused("http://0x7f.1/")); // 127.0.0.1, hex and short form
        assert!(refused("http://0/"));
        assert!(refused("https://10.0.0.1/"));
        assert!(refused(
            "http://runtime.local:9001/2018-06-01/runtime/invocation/next"
        ));
        assert!(client.check_url("https://example.com/hook?x=1").is_ok());
        assert!(client.check_url("http://8.8.8.8/").is_ok());
        assert!(client.check_url("HTTPS://Example.com").is_ok());
    }

    #[test]
    fn the_user_agent_names_the_version() {
        assert_eq!(USER_AGENT, format!("sundial/{}", env!("CARGO_PKG_VERSION")));
    }
}
