//! Sundial on AWS: the DynamoDB [`Store`](sundial_ports::store::Store), the SQS
//! [`Queue`](sundial_ports::queue::Queue), the EventBridge/SQS
//! [`EventPublisher`](sundial_ports::events::EventPublisher), and what the four Lambda functions
//! do with their events ([`handlers`]).
//!
//! The functions in `functions/` are a few lines each: read [`Settings`] once per cold start, build
//! a [`Sundial`] (the SDK clients, the store, the queues, the engine), and hand every event to a
//! handler here. The handlers are generic over the engine's ports, so their tests run them on the
//! in-memory adapters; the same services run `sundial serve` on the embedded store.

pub mod console;
pub mod dynamo;
pub mod handlers;
pub mod jwt_scopes;
pub mod logging;
pub mod metrics;
pub mod oidc;
pub mod publisher;
pub mod runtime;
pub mod sqs;

pub use dynamo::DynamoStore;
pub use publisher::AwsPublisher;
pub use runtime::{sdk_config, AwsEngine, ConfigError, Ports, Settings, Sundial};
pub use sqs::SqsQueue;

impl Sundial {
    /// Reads the settings from the environment and builds everything: what a function does once
    /// per cold start.
    pub async fn from_env() -> Result<Self, ConfigError> {
        let settings = Settings::from_env()?;
        let sdk = sdk_config().await;
        let sundial = Sundial::new(&settings, &sdk)?;
        sundial.check_layout().await?;
        Ok(sundial)
    }

    /// The API function's router, built from the environment once per cold start: the API and,
    /// when `SUNDIAL_CONSOLE_TOKENS_SECRET` names the console's secret, the console beside it
    /// ([`handlers::api_router_with_console`]), its tokens read from that secret now. Returned
    /// with the `Sundial` it serves, which the caller keeps for as long as it serves the router:
    /// the use cases hold the engine weakly, and without it a trigger or a job planned at once
    /// would send no message (the engine's hooks would be gone).
    pub async fn api_from_env() -> Result<(Self, axum::Router), ConfigError> {
        let settings = Settings::from_env()?;
        let sdk = sdk_config().await;
        let sundial = Sundial::new(&settings, &sdk)?.unbatched();
        sundial.check_layout().await?;
        let console = match (&settings.console_tokens_secret, &settings.console_client_id) {
            (Some(secret), _) => Some(console::config(
                console::tokens_from_secret(&sdk, secret).await?,
            )),
            (None, Some(client_id)) => {
                Some(Self::sign_in_console(&settings, &sdk, client_id).await?)
            }
            (None, None) => None,
        };
        let router = handlers::api_router_with_console(&sundial, console);
        Ok((sundial, router))
    }

    /// The console with a sign-in at the stack's issuer as the client `client_id`, its secret
    /// read now if the stack names one.
    async fn sign_in_console(
        settings: &Settings,
        sdk: &aws_config::SdkConfig,
        client_id: &str,
    ) -> Result<sundial_console::ConsoleConfig, ConfigError> {
        let issuer = settings.jwt_issuer.as_deref().ok_or_else(|| {
            ConfigError::new("SUNDIAL_CONSOLE_CLIENT_ID: the sign-in needs SUNDIAL_JWT_ISSUER")
        })?;
        let secret = match &settings.console_client_secret {
            Some(arn) => Some(
                console::read_secret(sdk, "SUNDIAL_CONSOLE_CLIENT_SECRET", arn)
                    .await?
                    .trim()
                    .to_owned(),
            ),
            None => None,
        };
        let client = oidc::OidcClient::new(
            issuer,
            client_id,
            secret,
            &settings.public_url,
            settings.jwt_scopes.clone(),
        )
        .map_err(ConfigError::new)?;
        Ok(console::config_with(sundial_console::ConsoleAuth::SignIn(
            sundial_console::sign_in::Provider(std::sync::Arc::new(client)),
        )))
    }

    /// Refuses a table of another layout (see [`dynamo::layout`]), recording this one on a fresh
    /// table: what [`Sundial::from_env`] does before a function serves anything.
    pub async fn check_layout(&self) -> Result<(), ConfigError> {
        self.engine
            .app()
            .store()
            .check_layout()
            .await
            .map(drop)
            .map_err(|e| ConfigError::new(e.to_string()))
    }
}
