//! The meter in front of a real moto: each documented billing rule, through real requests.

// Helper functions outside #[test] are test code too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use serde_json::{json, Value};
use sundial_meter::{proxy, Bill, Meter};

/// A DynamoDB JSON call through the meter; answers the status and the body.
async fn call(url: &str, operation: &str, body: Value) -> (u16, Value) {
    let answer = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(url)
        .header("x-amz-target", format!("DynamoDB_20120810.{operation}"))
        .header("content-type", "application/x-amz-json-1.0")
        // moto reads the region and account from the credential scope; it checks no signature.
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=test/20300101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0",
        )
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    let body = answer.bytes().await.unwrap_or_default();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn text(n: usize) -> Value {
    json!({"S": "x".repeat(n)})
}

/// The bill of what `meter` saw since the last call, then a fresh start.
fn billed(meter: &Meter) -> Bill {
    let bill = meter.total();
    meter.reset();
    bill
}

#[tokio::test(flavor = "multi_thread")]
async fn each_rule_bills_real_requests_as_aws_documents_them() {
    let Some(moto) = sundial_testkit::moto::moto_or_skip("meter") else {
        return;
    };
    let meter = Arc::new(Meter::new());
    let (url, _task) = proxy::start(&moto.endpoint, Arc::clone(&meter))
        .await
        .unwrap();
    let table = "metered";
    let (status, body) = call(&url, "CreateTable", json!({
        "TableName": table,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "ik", "AttributeType": "S"}, {"AttributeName": "is", "AttributeType": "S"}
        ],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": [{
            "IndexName": "keys", "Projection": {"ProjectionType": "KEYS_ONLY"},
            "KeySchema": [{"AttributeName": "ik", "KeyType": "HASH"}, {"AttributeName": "is", "KeyType": "RANGE"}]
        }]
    })).await;
    assert_eq!(status, 200, "{body}");
    billed(&meter);

    // A 500-byte item outside the index: 1 WRU.
    let small = json!({"pk": {"S": "a"}, "sk": {"S": "1"}, "body": text(490)});
    call(&url, "PutItem", json!({"TableName": table, "Item": small})).await;
    let bill = billed(&meter);
    assert_eq!(
        (bill.wru, bill.index_wru, bill.dynamo_requests),
        (1.0, 0.0, 1)
    );

    // A 3.5 KB item in the keys-only index: 4 WRU on the table, 1 on the index.
    let big = json!({"pk": {"S": "b"}, "sk": {"S": "1"}, "ik": {"S": "DUE"}, "is": {"S": "1"}, "body": text(3500)});
    call(&url, "PutItem", json!({"TableName": table, "Item": big})).await;
    let bill = billed(&meter);
    assert_eq!((bill.wru, bill.index_wru), (5.0, 1.0));

    // Shrinking it bills the larger size, before; it touches nothing the index projects.
    let (status, body) = call(
        &url,
        "UpdateItem",
        json!({
            "TableName": table, "Key": {"pk": {"S": "b"}, "sk": {"S": "1"}},
            "UpdateExpression": "SET body = :b", "ExpressionAttributeValues": {":b": text(10)}
        }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let bill = billed(&meter);
    assert_eq!((bill.wru, bill.index_wru), (4.0, 0.0));

    // Moving its index key is a delete and a put on the index.
    call(
        &url,
        "UpdateItem",
        json!({
            "TableName": table, "Key": {"pk": {"S": "b"}, "sk": {"S": "1"}},
            "UpdateExpression": "SET ik = :k", "ExpressionAttributeValues": {":k": {"S": "LATER"}}
        }),
    )
    .await;
    let bill = billed(&meter);
    assert_eq!((bill.wru, bill.index_wru), (3.0, 2.0));
    assert!(
        meter.hottest_writes(10).is_empty(),
        "reset forgets the keys too"
    );

    // A refused conditional write is billed (the existing item's size, at least 1) and writes no
    // index.
    let (status, _) = call(
        &url,
        "PutItem",
        json!({
            "TableName": table, "Item": big, "ConditionExpression": "attribute_not_exists(pk)"
        }),
    )
    .await;
    assert_eq!(status, 400);
    let bill = billed(&meter);
    assert_eq!((bill.wru, bill.index_wru), (1.0, 0.0));

    // A transaction: each item twice, the condition check included.
    let (status, body) = call(&url, "TransactWriteItems", json!({"TransactItems": [
        {"Put": {"TableName": table, "Item": {"pk": {"S": "c"}, "sk": {"S": "1"}, "body": text(100)}}},
        {"ConditionCheck": {"TableName": table, "Key": {"pk": {"S": "a"}, "sk": {"S": "1"}},
                            "ConditionExpression": "attribute_exists(pk)"}}
    ]})).await;
    assert_eq!(status, 200, "{body}");
    let bill = billed(&meter);
    assert_eq!((bill.wru, bill.index_wru), (4.0, 0.0));

    // A query bills every item it evaluates, before its filter, together per 4 KB: three items of
    // about 2 KB, none returned, read eventually consistent: ceil(6 KB / 4 KB) / 2 = 1 RRU.
    for sk in ["1", "2", "3"] {
        call(
            &url,
            "PutItem",
            json!({"TableName": table,
            "Item": {"pk": {"S": "q"}, "sk": {"S": sk}, "body": text(2000)}}),
        )
        .await;
    }
    billed(&meter);
    let (status, body) = call(
        &url,
        "Query",
        json!({
            "TableName": table, "KeyConditionExpression": "pk = :p",
            "FilterExpression": "attribute_exists(nothing)",
            "ExpressionAttributeValues": {":p": {"S": "q"}}
        }),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["Count"], 0, "{body}");
    let bill = billed(&meter);
    assert_eq!((bill.rru, bill.dynamo_requests), (1.0, 1));

    // A strongly consistent read of a 2 KB item: 1 RRU; a missing item still 0.5 eventually.
    call(
        &url,
        "GetItem",
        json!({"TableName": table, "ConsistentRead": true,
        "Key": {"pk": {"S": "q"}, "sk": {"S": "1"}}}),
    )
    .await;
    call(
        &url,
        "GetItem",
        json!({"TableName": table,
        "Key": {"pk": {"S": "none"}, "sk": {"S": "1"}}}),
    )
    .await;
    let bill = billed(&meter);
    assert_eq!(bill.rru, 1.5);

    // Per key and second: the three puts to partition `q` in one second.
    meter.set_second(1_000);
    for sk in ["4", "5", "6"] {
        call(
            &url,
            "PutItem",
            json!({"TableName": table,
            "Item": {"pk": {"S": "q"}, "sk": {"S": sk}, "body": text(10)}}),
        )
        .await;
    }
    let hot = meter.hottest_writes(1);
    assert_eq!(
        (hot[0].at.key.as_str(), hot[0].peak, hot[0].second),
        ("q", 3.0, 1_000)
    );
}
