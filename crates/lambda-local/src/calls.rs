//! The AWS calls each function really makes, recorded on their way to moto.
//!
//! Each function's `AWS_ENDPOINT_URL` points at a recorder of its own on loopback, which forwards
//! every request to moto unchanged and notes the IAM actions it needs: an SDK call's
//! `X-Amz-Target` (`DynamoDB_20120810.Query` → `dynamodb:Query`), or, for a transaction, the
//! actions IAM authorizes it by (each item's `Put`, `Update`, `Delete` or `ConditionCheck`: IAM has
//! no `TransactWriteItems` action). [`crate::checks::unauthorized`] then compares them with the
//! function's policy in template.yaml: moto enforces no IAM, so without this a call the deployed
//! role does not allow would first fail on AWS.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::Value;

use crate::Error;

/// The largest request body forwarded (DynamoDB's request limit is 16 MB).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// IAM actions by function (logical id), with how many requests needed each.
#[derive(Debug, Default)]
pub struct AwsCalls {
    by_function: Mutex<BTreeMap<String, BTreeMap<String, u64>>>,
}

impl AwsCalls {
    fn note(&self, function: &str, actions: &BTreeSet<String>) {
        let mut calls = self
            .by_function
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let counts = calls.entry(function.to_owned()).or_default();
        for action in actions {
            *counts.entry(action.clone()).or_default() += 1;
        }
    }

    /// What was recorded so far: function → IAM action → requests.
    pub fn snapshot(&self) -> BTreeMap<String, BTreeMap<String, u64>> {
        self.by_function
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The IAM actions one request needs, from its `X-Amz-Target` and (for transactions) its body.
/// Empty for a request that is not an AWS JSON-protocol call.
pub fn actions_of(target: Option<&str>, body: &[u8]) -> BTreeSet<String> {
    let Some((service, operation)) = target.and_then(|t| t.split_once('.')) else {
        return BTreeSet::new();
    };
    let prefix = match service {
        s if s.starts_with("DynamoDB_") => "dynamodb",
        "AmazonSQS" => "sqs",
        "AWSEvents" => "events",
        "secretsmanager" => "secretsmanager",
        other => return BTreeSet::from([format!("unknown:{other}.{operation}")]),
    };
    let action = |name: &str| format!("{prefix}:{name}");
    match (prefix, operation) {
        ("dynamodb", "TransactWriteItems") => {
            let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let items = parsed["TransactItems"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            items
                .iter()
                .filter_map(Value::as_object)
                .flat_map(|item| item.keys())
                .map(|kind| match kind.as_str() {
                    "Put" => action("PutItem"),
                    "Update" => action("UpdateItem"),
                    "Delete" => action("DeleteItem"),
                    "ConditionCheck" => action("ConditionCheckItem"),
                    other => action(other),
                })
                .collect()
        }
        ("dynamodb", "TransactGetItems") => BTreeSet::from([action("GetItem")]),
        // SQS authorizes a batch by the single action.
        ("sqs", op) if op.ends_with("Batch") => {
            BTreeSet::from([action(op.trim_end_matches("Batch"))])
        }
        (_, op) => BTreeSet::from([action(op)]),
    }
}

struct Recorder {
    function: String,
    upstream: String,
    client: reqwest::Client,
    calls: Arc<AwsCalls>,
}

/// Starts `function`'s recorder in front of moto at `upstream`; answers its URL.
pub async fn start(
    function: &str,
    upstream: &str,
    calls: Arc<AwsCalls>,
) -> Result<(String, tokio::task::JoinHandle<()>), Error> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| Error::io("binding an AWS call recorder", e))?;
    let address = listener
        .local_addr()
        .map_err(|e| Error::io("reading the recorder's address", e))?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| Error::Moto(format!("an HTTP client for the recorder: {e}")))?;
    let recorder = Arc::new(Recorder {
        function: function.to_owned(),
        upstream: upstream.trim_end_matches('/').to_owned(),
        client,
        calls,
    });
    let app = Router::new().fallback(forward).with_state(recorder);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((format!("http://{address}"), task))
}

async fn forward(State(recorder): State<Arc<Recorder>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "request body over 16 MB").into_response();
    };
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok());
    recorder
        .calls
        .note(&recorder.function, &actions_of(target, &body));
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let forwarded = sundial_meter::proxy::forward(
        &recorder.client,
        &recorder.upstream,
        parts.method.clone(),
        path,
        &parts.headers,
        body,
    )
    .await;
    match forwarded {
        Ok(answer) => answer.into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, format!("moto: {e}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(actions: &[&str]) -> BTreeSet<String> {
        actions.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn a_call_needs_the_action_its_target_names() {
        assert_eq!(
            actions_of(Some("DynamoDB_20120810.Query"), b"{}"),
            set(&["dynamodb:Query"])
        );
        assert_eq!(
            actions_of(Some("AWSEvents.PutEvents"), b"{}"),
            set(&["events:PutEvents"])
        );
        assert_eq!(actions_of(None, b"Action=SendMessage"), set(&[]));
    }

    #[test]
    fn a_transaction_needs_each_items_action() {
        let body = br#"{"TransactItems": [{"Put": {}}, {"Update": {}}, {"ConditionCheck": {}}, {"Update": {}}]}"#;
        assert_eq!(
            actions_of(Some("DynamoDB_20120810.TransactWriteItems"), body),
            set(&[
                "dynamodb:ConditionCheckItem",
                "dynamodb:PutItem",
                "dynamodb:UpdateItem"
            ])
        );
    }

    #[test]
    fn an_sqs_batch_needs_the_single_action() {
        assert_eq!(
            actions_of(Some("AmazonSQS.SendMessageBatch"), b"{}"),
            set(&["sqs:SendMessage"])
        );
    }
}
