//! The query Lambda: wiring only.

use lambda_http::{Error, Request, run, service_fn};
use std::sync::Arc;
use tally_query::handle;
use tally_store::clock::SystemClock;
use tally_store::ports::DynamoQuery;
use tally_store::{ClientOptions, Store};

#[tokio::main]
async fn main() -> Result<(), Error> {
    tally_store::env::init_tracing();
    let store = Store::connect(&ClientOptions::from_env(), &tally_store::env::table_name()).await;
    let query = Arc::new(DynamoQuery::new(store));
    run(service_fn(move |request: Request| {
        let query = query.clone();
        async move { Ok::<_, Error>(handle(&*query, &SystemClock, request).await) }
    }))
    .await
}
