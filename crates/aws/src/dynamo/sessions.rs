//! Signed-out console sessions (`SessionStore`): one small item per nonce, `{ns}SR#{nonce}` /
//! `SR`, kind `session`, with `expiresAt` (epoch seconds) the expiry of the cookie it signed out.
//! The table's TTL on `expiresAt` deletes it after that; until DynamoDB gets to it, reads skip it
//! as they skip every expired item. A logout is one `PutItem` (1 WCU); each console page a signed
//! in reader loads is one strongly consistent `GetItem` of it (1 RCU), present or not.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};
use sundial_ports::store::{SessionStore, StoreError};

use super::keys::Item;
use super::DynamoStore;

/// The `kind` of a signed-out session's item.
const KIND_SESSION: &str = "session";
/// The sort key of a signed-out session's item.
const SESSION_SK: &str = "SR";

impl DynamoStore {
    fn revoked_session_key(&self, nonce: &str) -> Item {
        HashMap::from([
            (
                "pk".to_owned(),
                AttributeValue::S(format!("{}SR#{nonce}", self.keys.ns())),
            ),
            ("sk".to_owned(), AttributeValue::S(SESSION_SK.to_owned())),
        ])
    }
}

impl SessionStore for DynamoStore {
    async fn revoke_session(
        &self,
        nonce: &str,
        expires_at: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let mut item = self.revoked_session_key(nonce);
        item.insert("kind".into(), AttributeValue::S(KIND_SESSION.into()));
        item.insert(
            "expiresAt".into(),
            AttributeValue::N(expires_at.timestamp().to_string()),
        );
        self.put_item(item).await?;
        Ok(())
    }

    async fn session_revoked(&self, nonce: &str, now: DateTime<Utc>) -> Result<bool, StoreError> {
        let Some(item) = self.get_item(self.revoked_session_key(nonce)).await? else {
            return Ok(false);
        };
        let expiry = item
            .get("expiresAt")
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse::<i64>().ok());
        Ok(expiry.is_some_and(|at| at > now.timestamp()))
    }
}
