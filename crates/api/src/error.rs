//! Errors as docs/api.md's envelope: `{"resp_code": <status>, "resp_msg": "<message>"}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

use super::schema::ErrorEnvelope;

/// An HTTP error answered with the docs/api.md envelope and a matching status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// An error with a status and a message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// A 400 naming the field: `"{field}: {message}"`.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("{field}: {}", message.into()),
        )
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message (`resp_msg`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorEnvelope {
            resp_code: self.status.as_u16(),
            resp_msg: self.message,
        };
        (self.status, Json(body)).into_response()
    }
}
