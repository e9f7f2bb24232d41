//! Settings (`SettingStore`, the debug mode): one item per name (`{ns}S#{name}` / `S`), its document
//! JSON text in `doc`, written only over the version read.

use aws_sdk_dynamodb::types::AttributeValue;
use sundial_ports::store::{SettingRecord, SettingStore, StoreError};

use super::item::{millis, number, string};
use super::{DynamoStore, VERSION_MATCHES};

/// The `kind` of setting items.
const KIND_SETTING: &str = "setting";

impl SettingStore for DynamoStore {
    async fn get_setting(&self, name: &str) -> Result<Option<SettingRecord>, StoreError> {
        let Some(item) = self.get_item(self.keys.setting(name)).await? else {
            return Ok(None);
        };
        let text = string(&item, "doc")?;
        let value = serde_json::from_str(&text).map_err(|e| {
            StoreError::corrupt(
                format!("setting {name} has a bad `doc`: not JSON"),
                Some(sundial_ports::cause::Cause::new(e)),
            )
        })?;
        Ok(Some(SettingRecord {
            name: name.to_owned(),
            version: number(&item, "version")?,
            updated_at: millis(&item, "updatedAt")?,
            value,
        }))
    }

    async fn put_setting(&self, setting: &SettingRecord) -> Result<(), StoreError> {
        let key = format!("setting {}", setting.name);
        let mut item = self.keys.setting(&setting.name);
        let doc = serde_json::to_string(&setting.value)
            .map_err(|e| StoreError::unavailable_because("encoding a setting", e))?;
        item.insert("kind".into(), AttributeValue::S(KIND_SETTING.into()));
        item.insert(
            "version".into(),
            AttributeValue::N(setting.version.to_string()),
        );
        item.insert(
            "updatedAt".into(),
            AttributeValue::N(setting.updated_at.timestamp_millis().to_string()),
        );
        item.insert("doc".into(), AttributeValue::S(doc));
        if setting.version <= 1 {
            return match self
                .put_if(item, "attribute_not_exists(pk)", vec![])
                .await?
            {
                None => Ok(()),
                Some(_) => Err(StoreError::AlreadyExists(key)),
            };
        }
        let expected = setting.version - 1;
        let values = vec![(":v", AttributeValue::N(expected.to_string()))];
        match self.put_if(item, VERSION_MATCHES, values).await? {
            None => Ok(()),
            Some(Some(_)) => Err(StoreError::VersionConflict { key, expected }),
            Some(None) => Err(StoreError::NotFound(key)),
        }
    }
}
