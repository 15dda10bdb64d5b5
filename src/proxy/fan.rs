//! Progress of a request fanned out to several servers (issue 20, item 4): the editor's
//! `workDoneToken` shows one piece of work however many servers answer.
//!
//! Each server asked gets a token of its own, `filepuff/fan/ID/SERIAL` (LSP 3.17 "Work Done
//! Progress": a `workDoneToken` in the request's params, progress reported with `$/progress`
//! on it). Their reports reach the editor on its token: the first `begin` as it is, a later
//! server's `begin` as a `report` (its title as the message), every `report`, and one `end`
//! when every server has ended its progress or answered the request (a server that answered
//! has finished its work, whether or not it ended its progress). Progress on a fan token
//! filepuff no longer knows is dropped: the editor never hears of the servers' tokens.

use std::collections::HashMap;

use serde_json::{Value, json};

/// The prefix of the tokens given to servers.
const PREFIX: &str = "filepuff/fan/";

/// Where one server of a fan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Asked; no progress and no answer yet.
    Waiting,
    /// Its progress began.
    Active,
    /// Its progress ended, or it answered.
    Done,
}

#[derive(Debug)]
struct Fan {
    /// The editor's `workDoneToken` (a string or an integer).
    editor_token: Value,
    /// By server serial.
    servers: HashMap<u64, Phase>,
    /// Whether the editor was sent `begin`.
    begun: bool,
}

/// The fans in flight of one session.
#[derive(Debug, Default)]
pub(crate) struct Fans {
    next: u64,
    fans: HashMap<u64, Fan>,
}

/// What to do with a server's `$/progress`.
#[derive(Debug, PartialEq)]
pub(crate) enum Progress {
    /// Not on a fan token: handled as before.
    NotFan,
    /// On a fan token, nothing for the editor.
    Drop,
    /// Send these `$/progress` params to the editor.
    Forward(Value),
}

impl Fans {
    /// Starts a fan on `editor_token` over the servers `serials`; returns its id and each
    /// server's token (in `serials` order).
    pub(crate) fn start(&mut self, editor_token: Value, serials: &[u64]) -> (u64, Vec<String>) {
        self.next += 1;
        let id = self.next;
        let servers = serials.iter().map(|serial| (*serial, Phase::Waiting)).collect();
        self.fans.insert(id, Fan { editor_token, servers, begun: false });
        (id, serials.iter().map(|serial| format!("{PREFIX}{id}/{serial}")).collect())
    }

    /// A `$/progress` from server `serial` on `token` with `value` (`WorkDoneProgressBegin`,
    /// `…Report` or `…End`).
    pub(crate) fn progress(&mut self, serial: u64, token: &str, value: &Value) -> Progress {
        let Some(rest) = token.strip_prefix(PREFIX) else { return Progress::NotFan };
        let Some((id, owner)) = rest.split_once('/') else { return Progress::Drop };
        let (Ok(id), Ok(owner)) = (id.parse::<u64>(), owner.parse::<u64>()) else { return Progress::Drop };
        if owner != serial {
            return Progress::Drop;
        }
        let Some(fan) = self.fans.get_mut(&id) else { return Progress::Drop };
        let Some(phase) = fan.servers.get_mut(&serial) else { return Progress::Drop };
        let kind = value.get("kind").and_then(Value::as_str);
        let out = match (kind, *phase) {
            (Some("begin"), Phase::Waiting) => {
                *phase = Phase::Active;
                if fan.begun {
                    let mut report = json!({ "kind": "report" });
                    if let Some(title) = value.get("title").and_then(Value::as_str) {
                        let message = value.get("message").and_then(Value::as_str);
                        report["message"] = json!(match message {
                            Some(message) => format!("{title}: {message}"),
                            None => title.to_owned(),
                        });
                    }
                    Some(report)
                } else {
                    fan.begun = true;
                    Some(value.clone())
                }
            }
            (Some("report"), Phase::Active) => Some(value.clone()),
            (Some("end"), Phase::Active) => {
                *phase = Phase::Done;
                return self.settle(id).map_or(Progress::Drop, Progress::Forward);
            }
            _ => None,
        };
        match out {
            Some(value) => Progress::Forward(json!({ "token": fan.editor_token, "value": value })),
            None => Progress::Drop,
        }
    }

    /// Server `serial` answered fan `id`'s request; returns the editor's `end` when that was the
    /// last server.
    pub(crate) fn answered(&mut self, id: u64, serial: u64) -> Option<Value> {
        let fan = self.fans.get_mut(&id)?;
        fan.servers.insert(serial, Phase::Done);
        self.settle(id)
    }

    /// Ends fan `id` when every server is done: the editor's `end` params if it had begun.
    fn settle(&mut self, id: u64) -> Option<Value> {
        let fan = self.fans.get(&id)?;
        if fan.servers.values().any(|phase| *phase != Phase::Done) {
            return None;
        }
        let fan = self.fans.remove(&id)?;
        fan.begun.then(|| json!({ "token": fan.editor_token, "value": { "kind": "end" } }))
    }

    /// Forgets fan `id` (its request was cancelled): the editor's `end` if it had begun.
    pub(crate) fn abandon(&mut self, id: u64) -> Option<Value> {
        let fan = self.fans.remove(&id)?;
        fan.begun.then(|| json!({ "token": fan.editor_token, "value": { "kind": "end" } }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_20_the_editor_token_sees_one_begin_reports_and_one_end() {
        let mut fans = Fans::default();
        let (id, tokens) = fans.start(json!(7), &[1, 2]);
        let begin = |title: &str| json!({ "kind": "begin", "title": title });
        let report = json!({ "kind": "report", "message": "half" });
        let end = json!({ "kind": "end" });
        let mut seen = Vec::new();
        let mut push = |p: Progress| {
            if let Progress::Forward(params) = p {
                assert_eq!(params["token"], json!(7));
                seen.push(params["value"]["kind"].as_str().unwrap().to_owned());
            }
        };
        push(fans.progress(1, &tokens[0], &begin("one")));
        push(fans.progress(2, &tokens[1], &begin("two")));
        push(fans.progress(1, &tokens[0], &report));
        push(fans.progress(2, &tokens[1], &report));
        push(fans.progress(1, &tokens[0], &end));
        push(fans.answered(id, 1).map_or(Progress::Drop, Progress::Forward));
        push(fans.progress(2, &tokens[1], &end));
        assert_eq!(seen, ["begin", "report", "report", "report", "end"]);
        // Late or foreign progress on a fan token never reaches the editor.
        assert_eq!(fans.progress(2, &tokens[1], &end), Progress::Drop);
        assert_eq!(fans.progress(1, &tokens[1], &report), Progress::Drop);
        assert_eq!(fans.progress(1, "gopls-3", &report), Progress::NotFan);
    }

    #[test]
    fn an_answer_ends_the_work_of_a_server_that_never_ended_it() {
        let mut fans = Fans::default();
        let (id, tokens) = fans.start(json!("t"), &[1, 2]);
        assert!(matches!(
            fans.progress(1, &tokens[0], &json!({ "kind": "begin", "title": "x" })),
            Progress::Forward(_)
        ));
        assert_eq!(fans.answered(id, 2), None);
        assert_eq!(fans.answered(id, 1), Some(json!({ "token": "t", "value": { "kind": "end" } })));
        // Without any progress, no end either.
        let (id, _) = fans.start(json!("u"), &[1, 2]);
        assert_eq!(fans.answered(id, 1), None);
        assert_eq!(fans.answered(id, 2), None);
    }
}
