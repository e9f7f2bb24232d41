//! The meter as a proxy in front of moto: clients point their `AWS_ENDPOINT_URL` (or the SDK's
//! endpoint) at it; it forwards every request unchanged and books what AWS would bill for it.
//!
//! To bill a write by the real item sizes it reads each item it writes from moto just before and
//! just after forwarding it (writes through one meter are serialized for that, so another write
//! cannot slip between the reads); to bill a `Query` or `Scan` by every item it evaluates, before
//! any filter, it replays it without its filter and projection. Those reads of its own go
//! straight to moto and are not booked.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::Mutex;

use crate::bill::{self, bill_write, chunks, read_units, Outcome, TableSchema};
use crate::size::{item_size, Item};
use crate::{Bill, KeySpace, Meter};

/// The largest request body forwarded (DynamoDB's request limit is 16 MB).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// The headers moto reads to place a request (region, account), copied onto the meter's reads.
const PLACING_HEADERS: [&str; 3] = ["authorization", "x-amz-date", "x-amz-security-token"];

struct Proxy {
    upstream: String,
    client: reqwest::Client,
    meter: Arc<Meter>,
    schemas: Mutex<BTreeMap<String, TableSchema>>,
    writes: Mutex<()>,
}

/// Starts a metering proxy in front of `upstream` (moto's URL) on a free loopback port; answers
/// its URL and the task serving it.
pub async fn start(
    upstream: &str,
    meter: Arc<Meter>,
) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let address = listener.local_addr()?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(std::io::Error::other)?;
    let proxy = Arc::new(Proxy {
        upstream: upstream.trim_end_matches('/').to_owned(),
        client,
        meter,
        schemas: Mutex::new(BTreeMap::new()),
        writes: Mutex::new(()),
    });
    let app = Router::new().fallback(handle).with_state(proxy);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("http://{address}"), task))
}

/// An answer from upstream, kept to be both read and handed back.
pub struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    fn ok(&self) -> bool {
        self.status.is_success()
    }

    /// Whether DynamoDB refused it for a condition (or a cancelled transaction): still billed.
    fn refused(&self) -> bool {
        let kind = self.json()["__type"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        kind.ends_with("ConditionalCheckFailedException")
            || kind.ends_with("TransactionCanceledException")
    }

    /// The answer as the proxy's own response, unchanged.
    pub fn into_response(self) -> Response {
        let mut response = Response::builder().status(self.status);
        for (name, value) in &self.headers {
            response = response.header(name, value);
        }
        response
            .body(Body::from(self.body))
            .unwrap_or_else(|_| StatusCode::BAD_GATEWAY.into_response())
    }
}

async fn handle(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "request body over 16 MB").into_response();
    };
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let forward = || async {
        let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        proxy
            .send(parts.method.clone(), path, &parts.headers, body.clone())
            .await
    };
    let answer = match target.split_once('.') {
        Some((service, operation)) if service.starts_with("DynamoDB_") => {
            proxy
                .dynamo(operation, &request, &parts.headers, forward)
                .await
        }
        Some(("AmazonSQS", operation)) => {
            let answer = forward().await;
            if let Ok(answer) = &answer {
                if answer.ok() {
                    let requests = sqs_requests(operation, &request);
                    proxy.meter.book(
                        &format!("sqs:{operation}"),
                        &Bill {
                            sqs_requests: requests,
                            ..Bill::default()
                        },
                    );
                }
            }
            answer
        }
        Some(("AWSEvents", "PutEvents")) => {
            let answer = forward().await;
            if let Ok(answer) = &answer {
                if answer.ok() {
                    let events = request["Entries"]
                        .as_array()
                        .map(Vec::as_slice)
                        .unwrap_or_default()
                        .iter()
                        .map(|entry| chunks(event_size(entry)))
                        .sum();
                    proxy.meter.book(
                        "events:PutEvents",
                        &Bill {
                            events,
                            ..Bill::default()
                        },
                    );
                }
            }
            answer
        }
        _ => forward().await,
    };
    match answer {
        Ok(answer) => answer.into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, format!("moto: {e}")).into_response(),
    }
}

/// Sends a request on to `upstream` unchanged (its headers but `host`) and keeps the answer:
/// what every loopback proxy in front of moto does (this meter, lambda-local's call recorder).
pub async fn forward(
    client: &reqwest::Client,
    upstream: &str,
    method: axum::http::Method,
    path: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Answer, reqwest::Error> {
    let mut request = client
        .request(method, format!("{upstream}{path}"))
        .body(body);
    for (name, value) in headers {
        if name != "host" {
            request = request.header(name, value);
        }
    }
    let answer = request.send().await?;
    let status = answer.status();
    let headers = answer.headers().clone();
    let body = answer.bytes().await?;
    Ok(Answer {
        status,
        headers,
        body,
    })
}

/// SQS requests as billed: a send (or a batch of sends) per 64 KB of payload, any other call 1.
fn sqs_requests(operation: &str, request: &Value) -> u64 {
    let message = |m: &Value| {
        let body = m["MessageBody"].as_str().map_or(0, str::len);
        let attributes: usize = m["MessageAttributes"]
            .as_object()
            .map(|a| {
                a.iter()
                    .map(|(name, v)| {
                        name.len()
                            + v["DataType"].as_str().map_or(0, str::len)
                            + v["StringValue"].as_str().map_or(0, str::len)
                    })
                    .sum()
            })
            .unwrap_or(0);
        (body + attributes) as u64
    };
    match operation {
        "SendMessage" => chunks(message(request)),
        "SendMessageBatch" => chunks(
            request["Entries"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(message)
                .sum(),
        ),
        _ => 1,
    }
}

/// An EventBridge entry's billed size: its detail, detail type, source and resources.
fn event_size(entry: &Value) -> u64 {
    let text = |name: &str| entry[name].as_str().map_or(0, str::len);
    let resources: usize = entry["Resources"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).map(str::len).sum())
        .unwrap_or(0);
    (text("Detail") + text("DetailType") + text("Source") + resources) as u64
}

impl Proxy {
    async fn send(
        &self,
        method: axum::http::Method,
        path: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Answer, reqwest::Error> {
        forward(&self.client, &self.upstream, method, path, headers, body).await
    }

    /// A DynamoDB call of the meter's own, straight to moto, not booked.
    async fn own_call(&self, operation: &str, request: &Value, placing: &HeaderMap) -> Value {
        let mut headers = HeaderMap::new();
        for name in PLACING_HEADERS {
            if let Some(value) = placing.get(name) {
                headers.insert(name, value.clone());
            }
        }
        if let Ok(target) = format!("DynamoDB_20120810.{operation}").parse() {
            headers.insert("x-amz-target", target);
        }
        headers.insert(
            "content-type",
            axum::http::HeaderValue::from_static("application/x-amz-json-1.0"),
        );
        let body = Bytes::from(request.to_string());
        match self
            .send(axum::http::Method::POST, "/", &headers, body)
            .await
        {
            Ok(answer) if answer.ok() => answer.json(),
            _ => Value::Null,
        }
    }

    async fn schema(&self, table: &str, placing: &HeaderMap) -> Option<TableSchema> {
        if let Some(schema) = self.schemas.lock().await.get(table) {
            return Some(schema.clone());
        }
        let described = self
            .own_call("DescribeTable", &json!({"TableName": table}), placing)
            .await;
        let schema = TableSchema::from_description(&described["Table"])?;
        self.schemas
            .lock()
            .await
            .insert(table.to_owned(), schema.clone());
        Some(schema)
    }

    async fn item(&self, table: &str, key: &Item, placing: &HeaderMap) -> Option<Item> {
        let answer = self
            .own_call(
                "GetItem",
                &json!({"TableName": table, "Key": key, "ConsistentRead": true}),
                placing,
            )
            .await;
        answer["Item"].as_object().cloned()
    }

    /// The items at `keys` (table, primary key), read as they are now, in order: one `GetItem`
    /// for one key, else a strongly consistent `BatchGetItem` per 100 distinct keys. The meter
    /// reads every written item before and after its write; batching those reads keeps moto,
    /// which answers one request at a time, from spending most of a metered test on them.
    async fn items(&self, keys: &[(String, Item)], placing: &HeaderMap) -> Vec<Option<Item>> {
        if let [(table, key)] = keys {
            return vec![self.item(table, key, placing).await];
        }
        let mut distinct: Vec<&(String, Item)> = Vec::new();
        for wanted in keys {
            if !distinct.contains(&wanted) {
                distinct.push(wanted);
            }
        }
        let mut found: Vec<(String, Item)> = Vec::new();
        for chunk in distinct.chunks(100) {
            let mut tables = serde_json::Map::new();
            for (table, key) in chunk {
                let entry = tables
                    .entry(table.clone())
                    .or_insert_with(|| json!({"Keys": [], "ConsistentRead": true}));
                if let Some(list) = entry["Keys"].as_array_mut() {
                    list.push(Value::Object(key.clone()));
                }
            }
            let answer = self
                .own_call("BatchGetItem", &json!({"RequestItems": tables}), placing)
                .await;
            for (table, items) in answer["Responses"].as_object().into_iter().flatten() {
                for item in items.as_array().into_iter().flatten() {
                    if let Some(item) = item.as_object() {
                        found.push((table.clone(), item.clone()));
                    }
                }
            }
        }
        let mut answers = Vec::with_capacity(keys.len());
        for (table, key) in keys {
            let schema = self.schema(table, placing).await;
            answers.push(
                found
                    .iter()
                    .find(|(t, item)| {
                        t == table && schema.as_ref().is_some_and(|s| s.key_of(item) == *key)
                    })
                    .map(|(_, item)| item.clone()),
            );
        }
        answers
    }

    async fn dynamo<F, Fut>(
        &self,
        operation: &str,
        request: &Value,
        placing: &HeaderMap,
        forward: F,
    ) -> Result<Answer, reqwest::Error>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Answer, reqwest::Error>>,
    {
        let name = format!("dynamodb:{operation}");
        match operation {
            "PutItem" | "UpdateItem" | "DeleteItem" | "BatchWriteItem" | "TransactWriteItems" => {
                // A put names its whole item: read it back by its primary key.
                let mut writes = Vec::new();
                for (table, item_or_key, check_only) in item_writes(operation, request) {
                    if let Some(schema) = self.schema(&table, placing).await {
                        writes.push((table, schema.key_of(&item_or_key), check_only));
                    }
                }
                let _serialized = self.writes.lock().await;
                let keys: Vec<(String, Item)> = writes
                    .iter()
                    .map(|(table, key, _)| (table.clone(), key.clone()))
                    .collect();
                let befores = self.items(&keys, placing).await;
                let answer = forward().await?;
                let transactional = operation == "TransactWriteItems";
                let outcome = if answer.ok() {
                    Outcome::Written
                } else if answer.refused() {
                    Outcome::Refused
                } else {
                    return Ok(answer);
                };
                let written: Vec<(String, Item)> = writes
                    .iter()
                    .filter(|(_, _, check_only)| outcome == Outcome::Written && !check_only)
                    .map(|(table, key, _)| (table.clone(), key.clone()))
                    .collect();
                let mut afters = self.items(&written, placing).await.into_iter();
                let mut bills = Vec::new();
                for ((table, _, check_only), before) in writes.iter().zip(&befores) {
                    let after = if outcome == Outcome::Written && !check_only {
                        afters.next().flatten()
                    } else {
                        before.clone()
                    };
                    let Some(schema) = self.schema(table, placing).await else {
                        continue;
                    };
                    let bill = bill_write(
                        &schema,
                        before.as_ref(),
                        after.as_ref(),
                        transactional,
                        outcome,
                    );
                    bills.push((table.clone(), bill));
                }
                self.meter.book_writes(&name, &bills);
                Ok(answer)
            }
            "GetItem" | "BatchGetItem" => {
                let answer = forward().await?;
                if answer.ok() {
                    // A read is billed by the whole item, whatever it projected: the items are
                    // read again whole, all at once.
                    let wanted = item_reads(operation, request);
                    let keys: Vec<(String, Item)> = wanted
                        .iter()
                        .flat_map(|(table, keys, _)| {
                            keys.iter().map(move |key| (table.clone(), key.clone()))
                        })
                        .collect();
                    let mut whole = self.items(&keys, placing).await.into_iter();
                    let mut reads = Vec::new();
                    for (table, keys, consistent) in wanted {
                        let schema = self.schema(&table, placing).await;
                        for key in keys {
                            let size = whole.next().flatten().map_or(0, |i| item_size(&i));
                            let Some(schema) = &schema else {
                                continue;
                            };
                            let at = KeySpace {
                                space: table.clone(),
                                key: key
                                    .get(&schema.hash_key)
                                    .map(bill::key_text)
                                    .unwrap_or_default(),
                            };
                            reads.push((at, read_units(size, consistent)));
                        }
                    }
                    self.meter.book_reads(&name, &reads);
                }
                Ok(answer)
            }
            "Query" | "Scan" => {
                let answer = forward().await?;
                if answer.ok() {
                    let replayed = self
                        .own_call(operation, &unfiltered(request), placing)
                        .await;
                    let items = replayed["Items"].as_array().cloned().unwrap_or_default();
                    let size: u64 = items
                        .iter()
                        .filter_map(Value::as_object)
                        .map(item_size)
                        .sum();
                    let table = request["TableName"].as_str().unwrap_or_default();
                    let index = request["IndexName"].as_str();
                    let consistent = index.is_none() && request["ConsistentRead"] == json!(true);
                    let key = match (operation, self.schema(table, placing).await) {
                        ("Query", Some(schema)) => {
                            let hash = index
                                .and_then(|i| schema.indexes.iter().find(|x| x.name == i))
                                .map_or(schema.hash_key.clone(), |i| i.hash_key.clone());
                            query_partition(request, &hash)
                        }
                        _ => "(scan)".to_owned(),
                    };
                    let space = index.map_or_else(|| table.to_owned(), |i| format!("{table}/{i}"));
                    self.meter.book_reads(
                        &name,
                        &[(KeySpace { space, key }, read_units(size, consistent))],
                    );
                }
                Ok(answer)
            }
            _ => {
                let answer = forward().await?;
                self.meter.book(
                    &name,
                    &Bill {
                        dynamo_requests: 1,
                        ..Bill::default()
                    },
                );
                Ok(answer)
            }
        }
    }
}

/// The items a write request writes: (table, its key or, for a put, its whole item, whether it
/// only checks a condition).
fn item_writes(operation: &str, request: &Value) -> Vec<(String, Item, bool)> {
    let table = |v: &Value| v["TableName"].as_str().unwrap_or_default().to_owned();
    let key_of = |v: &Value, key_field: &str| v[key_field].as_object().cloned().unwrap_or_default();
    match operation {
        "PutItem" => vec![(table(request), key_of(request, "Item"), false)],
        "UpdateItem" | "DeleteItem" => vec![(table(request), key_of(request, "Key"), false)],
        "BatchWriteItem" => request["RequestItems"]
            .as_object()
            .map(|tables| {
                tables
                    .iter()
                    .flat_map(|(name, writes)| {
                        writes
                            .as_array()
                            .map(Vec::as_slice)
                            .unwrap_or_default()
                            .iter()
                            .map(|w| {
                                let key = w["PutRequest"]["Item"]
                                    .as_object()
                                    .or_else(|| w["DeleteRequest"]["Key"].as_object())
                                    .cloned()
                                    .unwrap_or_default();
                                (name.clone(), key, false)
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect()
            })
            .unwrap_or_default(),
        "TransactWriteItems" => request["TransactItems"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|item| {
                let (kind, part) = item.as_object()?.iter().next()?;
                let key = if kind == "Put" {
                    key_of(part, "Item")
                } else {
                    key_of(part, "Key")
                };
                Some((table(part), key, kind == "ConditionCheck"))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The items a read request reads: (table, keys, strongly consistent).
fn item_reads(operation: &str, request: &Value) -> Vec<(String, Vec<Item>, bool)> {
    match operation {
        "GetItem" => vec![(
            request["TableName"].as_str().unwrap_or_default().to_owned(),
            request["Key"].as_object().cloned().into_iter().collect(),
            request["ConsistentRead"] == json!(true),
        )],
        "BatchGetItem" => request["RequestItems"]
            .as_object()
            .map(|tables| {
                tables
                    .iter()
                    .map(|(name, part)| {
                        let keys = part["Keys"]
                            .as_array()
                            .map(Vec::as_slice)
                            .unwrap_or_default()
                            .iter()
                            .filter_map(Value::as_object)
                            .cloned()
                            .collect();
                        (name.clone(), keys, part["ConsistentRead"] == json!(true))
                    })
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// A `Query` or `Scan` that evaluates the same items and returns them whole: without its filter
/// and projection, and without the placeholders only those used (DynamoDB refuses unused ones).
pub fn unfiltered(request: &Value) -> Value {
    let mut replay = request.clone();
    let Some(fields) = replay.as_object_mut() else {
        return replay;
    };
    for field in [
        "FilterExpression",
        "ProjectionExpression",
        "Select",
        "AttributesToGet",
        "ReturnConsumedCapacity",
    ] {
        fields.remove(field);
    }
    let used = placeholders(
        fields
            .get("KeyConditionExpression")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    for (map, sigil) in [
        ("ExpressionAttributeNames", '#'),
        ("ExpressionAttributeValues", ':'),
    ] {
        if let Some(Value::Object(entries)) = fields.get_mut(map) {
            entries.retain(|name, _| name.starts_with(sigil) && used.contains(name));
            if entries.is_empty() {
                fields.remove(map);
            }
        }
    }
    replay
}

/// The `#name` and `:value` placeholders in an expression.
fn placeholders(expression: &str) -> Vec<String> {
    let mut found = Vec::new();
    let chars: Vec<char> = expression.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '#' || chars[i] == ':' {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            found.push(chars[start..i].iter().collect());
        } else {
            i += 1;
        }
    }
    found
}

/// The partition key value a `Query` reads: the value its key condition gives `hash_key`.
fn query_partition(request: &Value, hash_key: &str) -> String {
    let names = request["ExpressionAttributeNames"].as_object();
    let condition = request["KeyConditionExpression"]
        .as_str()
        .unwrap_or_default();
    for part in condition.split(" AND ").chain(condition.split(" and ")) {
        let Some((left, right)) = part.split_once('=') else {
            continue;
        };
        let left = left.trim();
        let attribute = names
            .and_then(|n| n.get(left))
            .and_then(Value::as_str)
            .unwrap_or(left);
        if attribute == hash_key {
            let value = &request["ExpressionAttributeValues"][right.trim()];
            return bill::key_text(value);
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_drops_the_filter_and_the_placeholders_only_it_used() {
        let request = json!({
            "TableName": "t",
            "IndexName": "gsi1",
            "KeyConditionExpression": "#pk = :pk AND #sk < :until",
            "FilterExpression": "#state = :s",
            "ProjectionExpression": "#pk, #sk",
            "ExpressionAttributeNames": {"#pk": "gsi1pk", "#sk": "gsi1sk", "#state": "state"},
            "ExpressionAttributeValues": {":pk": {"S": "DUE#1"}, ":until": {"N": "5"}, ":s": {"S": "x"}},
            "Limit": 100
        });
        let replay = unfiltered(&request);
        assert_eq!(replay["Limit"], 100);
        assert!(replay.get("FilterExpression").is_none());
        assert!(replay.get("ProjectionExpression").is_none());
        assert_eq!(
            replay["ExpressionAttributeNames"],
            json!({"#pk": "gsi1pk", "#sk": "gsi1sk"})
        );
        assert_eq!(
            replay["ExpressionAttributeValues"],
            json!({":pk": {"S": "DUE#1"}, ":until": {"N": "5"}})
        );
        assert_eq!(query_partition(&request, "gsi1pk"), "DUE#1");
    }

    #[test]
    fn a_transaction_writes_each_item_and_a_condition_check_only_checks() {
        let request = json!({"TransactItems": [
            {"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}, "sk": {"S": "1"}, "x": {"N": "1"}}}},
            {"ConditionCheck": {"TableName": "t", "Key": {"pk": {"S": "b"}, "sk": {"S": "1"}}}},
        ]});
        let writes = item_writes("TransactWriteItems", &request);
        assert_eq!(writes.len(), 2);
        assert!(!writes[0].2);
        assert!(writes[1].2);
    }

    #[test]
    fn sqs_bills_a_batch_by_its_total_payload() {
        let small = json!({"Entries": [{"MessageBody": "a"}, {"MessageBody": "b"}]});
        assert_eq!(sqs_requests("SendMessageBatch", &small), 1);
        let big = json!({"MessageBody": "x".repeat(70 * 1024)});
        assert_eq!(sqs_requests("SendMessage", &big), 2);
        assert_eq!(sqs_requests("DeleteMessage", &json!({})), 1);
    }
}
