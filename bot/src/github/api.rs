//! The REST calls the bot makes, typed: repositories, pull requests and issues, permissions, file
//! contents, comments and reactions, check runs (the bot's own, and every app's on a commit),
//! reviews, new pull requests, and GitHub Actions (workflow runs, jobs, job logs, job re-runs).
//!
//! The bodies and responses, as serde sees them, are in `types.rs`.

use reqwest::Method;
use reqwest::header::LOCATION;
use serde::de::DeserializeOwned;

use super::client::GithubClient;
use super::encoding::decode_wrapped_base64;
use super::error::GithubError;
use super::http::{Endpoint, Redirects};
use super::ids::{CheckRunId, CommentId, IssueNumber, Login, RepoName};
use super::paging::{self, Listing, PageLimit, limits};
use super::time::format_rfc3339;
use super::types::{
    ActionsJob, Annotation, AssigneesBody, BodyOnly, CheckRun, CheckRunOutput, CheckRunPage, CheckRunSummary,
    CheckRunUpdate, CheckRunUpdateBody, CheckSuitePage, CheckSuiteSummary, CommitPull, ContentEntry, CreatedPull,
    DismissalBody, InstallationRepositoryPage, Issue, IssueComment, JobLogText, JobPage, LabelsBody, NewCheckRun,
    NewCheckRunBody, NewIssue, NewPull, NewReview, Permission, PermissionResponse, PullFile, PullRequest, PullSimple,
    PullUpdate, Reaction, ReactionBody, Repository, Review, ReviewComment, ReviewersBody, RunFilter, TagName,
    WorkflowRunPage, WorkflowRunSummary,
};

/// The largest file `get_file` reads (the contents API inlines files up to 1 MB).
pub const MAX_FILE_SIZE: u64 = 1024 * 1024;

/// Keeps the last `max` bytes of a stream, starting at a line, without holding more than about
/// twice that.
#[derive(Debug)]
pub(crate) struct LogTail {
    max: usize,
    kept: Vec<u8>,
    /// Whether the byte before `kept` (if any was dropped) ended a line.
    after_newline: bool,
    dropped: bool,
    total: u64,
}

impl LogTail {
    pub fn new(max: usize) -> Self {
        LogTail {
            max,
            kept: Vec::new(),
            after_newline: true,
            dropped: false,
            total: 0,
        }
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.kept.extend_from_slice(chunk);
        // Compacting only past twice the limit keeps the copying linear in the log's size.
        if self.kept.len() > self.max.saturating_mul(2).max(64 * 1024) {
            self.drop_front(self.kept.len() - self.max);
        }
    }

    fn drop_front(&mut self, count: usize) {
        if count == 0 {
            return;
        }
        self.after_newline = self.kept[count - 1] == b'\n';
        self.kept.drain(..count);
        self.dropped = true;
    }

    pub fn finish(mut self) -> JobLogText {
        if self.kept.len() > self.max {
            self.drop_front(self.kept.len() - self.max);
        }
        let mut start = 0;
        if self.dropped && !self.after_newline {
            // Cut at the first line start in what is kept; a single line longer than the limit
            // keeps its end (from a character boundary) rather than nothing.
            start = match self.kept.iter().position(|b| *b == b'\n') {
                Some(newline) => newline + 1,
                None => self
                    .kept
                    .iter()
                    .position(|b| b & 0xC0 != 0x80)
                    .unwrap_or(self.kept.len()),
            };
        }
        JobLogText {
            text: String::from_utf8_lossy(&self.kept[start..]).into_owned(),
            truncated: self.dropped,
            total_bytes: self.total,
        }
    }
}

/// `repos/{owner}/{repo}` followed by `rest`.
fn repo_path(repo: &RepoName, rest: &[&str]) -> Vec<String> {
    let mut segments = vec!["repos".to_owned(), repo.owner().to_owned(), repo.name().to_owned()];
    segments.extend(rest.iter().map(|s| (*s).to_owned()));
    segments
}

impl GithubClient {
    pub async fn get_repo(&self, repo: &RepoName) -> Result<Repository, GithubError> {
        self.json(Endpoint::new(Method::GET, repo_path(repo, &[])), None).await
    }

    pub async fn get_pull(&self, repo: &RepoName, number: IssueNumber) -> Result<PullRequest, GithubError> {
        let number = number.to_string();
        self.json(Endpoint::new(Method::GET, repo_path(repo, &["pulls", &number])), None)
            .await
    }

    pub async fn get_issue(&self, repo: &RepoName, number: IssueNumber) -> Result<Issue, GithubError> {
        let number = number.to_string();
        self.json(Endpoint::new(Method::GET, repo_path(repo, &["issues", &number])), None)
            .await
    }

    /// The role of `login` on `repo`: the `role_name` when it is a built-in role, else the legacy
    /// `permission` (custom roles map to the base permission they extend). A user GitHub does not
    /// know has no permission. The login is a parsed [`Login`]: an empty or malformed one would ask
    /// GitHub about another path.
    pub async fn collaborator_permission(&self, repo: &RepoName, login: &Login) -> Result<Permission, GithubError> {
        let endpoint = Endpoint::new(
            Method::GET,
            repo_path(repo, &["collaborators", login.as_str(), "permission"]),
        );
        let response: PermissionResponse = match self.json(endpoint, None).await {
            Ok(response) => response,
            Err(GithubError::NotFound { .. }) => return Ok(Permission::None),
            Err(error) => return Err(error),
        };
        Ok(Permission::from_name(&response.role_name)
            .or_else(|| Permission::from_name(&response.permission))
            .unwrap_or(Permission::None))
    }

    /// The text of the file at `path` on `git_ref`, or `None` when there is no such path. A directory,
    /// symlink or submodule, a file over [`MAX_FILE_SIZE`] and a file that is not UTF-8 are errors.
    pub async fn get_file(&self, repo: &RepoName, path: &str, git_ref: &str) -> Result<Option<String>, GithubError> {
        let mut rest = vec!["contents"];
        let what = format!("{repo}:{path}@{git_ref}");
        for part in path.split('/') {
            if part.is_empty() || part == "." || part == ".." {
                return Err(GithubError::InvalidInput {
                    what,
                    message: "the path must be relative, without empty, `.` or `..` parts".to_owned(),
                });
            }
            rest.push(part);
        }
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &rest)).query("ref", git_ref);
        let reply = match self.send(&endpoint, None).await {
            Ok(reply) => reply,
            Err(GithubError::NotFound { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        let value: serde_json::Value = reply.json(&endpoint)?;
        if value.is_array() {
            return Err(GithubError::NotAFile {
                what,
                kind: "directory".to_owned(),
            });
        }
        let entry: ContentEntry = serde_json::from_value(value).map_err(|err| GithubError::Decode {
            what: endpoint.to_string(),
            message: err.to_string(),
        })?;
        decode_file(entry, &what).map(Some)
    }

    /// The open issues (not pull requests) `creator` opened, newest first: one page of 100.
    pub async fn open_issues_by(&self, repo: &RepoName, creator: &str) -> Result<Vec<Issue>, GithubError> {
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["issues"]))
            .query("state", "open")
            .query("creator", creator)
            .query("per_page", "100");
        let issues: Vec<Issue> = self.json(endpoint, None).await?;
        Ok(issues.into_iter().filter(|issue| !issue.is_pull_request()).collect())
    }

    pub async fn create_issue(&self, repo: &RepoName, title: &str, body: &str) -> Result<Issue, GithubError> {
        let endpoint = Endpoint::new(Method::POST, repo_path(repo, &["issues"]));
        self.json_with(endpoint, &NewIssue { title, body }).await
    }

    /// Replaces the body of issue `number`.
    pub async fn update_issue_body(
        &self,
        repo: &RepoName,
        number: IssueNumber,
        body: &str,
    ) -> Result<Issue, GithubError> {
        let number = number.to_string();
        let endpoint = Endpoint::new(Method::PATCH, repo_path(repo, &["issues", &number]));
        self.json_with(endpoint, &BodyOnly { body }).await
    }

    pub async fn create_issue_comment(
        &self,
        repo: &RepoName,
        number: IssueNumber,
        body: &str,
    ) -> Result<IssueComment, GithubError> {
        let number = number.to_string();
        let endpoint = Endpoint::new(Method::POST, repo_path(repo, &["issues", &number, "comments"]));
        self.json_with(endpoint, &BodyOnly { body }).await
    }

    /// Adds `labels` to issue or pull request `number` (GitHub creates the ones the repository
    /// lacks).
    pub async fn add_labels(&self, repo: &RepoName, number: IssueNumber, labels: &[String]) -> Result<(), GithubError> {
        let number = number.to_string();
        let endpoint = Endpoint::new(Method::POST, repo_path(repo, &["issues", &number, "labels"]));
        let _: serde_json::Value = self.json_with(endpoint, &LabelsBody { labels }).await?;
        Ok(())
    }

    /// Assigns issue or pull request `number` to `logins` (GitHub ignores those who cannot be).
    pub async fn add_assignees(
        &self,
        repo: &RepoName,
        number: IssueNumber,
        logins: &[String],
    ) -> Result<(), GithubError> {
        let number = number.to_string();
        let endpoint = Endpoint::new(Method::POST, repo_path(repo, &["issues", &number, "assignees"]));
        let _: serde_json::Value = self.json_with(endpoint, &AssigneesBody { assignees: logins }).await?;
        Ok(())
    }

    /// Asks `users` and the teams of `team_slugs` to review pull request `pull`.
    pub async fn request_reviewers(
        &self,
        repo: &RepoName,
        pull: IssueNumber,
        users: &[String],
        team_slugs: &[String],
    ) -> Result<(), GithubError> {
        let pull = pull.to_string();
        let endpoint = Endpoint::new(Method::POST, repo_path(repo, &["pulls", &pull, "requested_reviewers"]));
        let body = ReviewersBody {
            reviewers: users,
            team_reviewers: team_slugs,
        };
        let _: serde_json::Value = self.json_with(endpoint, &body).await?;
        Ok(())
    }

    pub async fn update_issue_comment(
        &self,
        repo: &RepoName,
        comment: CommentId,
        body: &str,
    ) -> Result<IssueComment, GithubError> {
        let comment = comment.to_string();
        let endpoint = Endpoint::new(Method::PATCH, repo_path(repo, &["issues", "comments", &comment]));
        self.json_with(endpoint, &BodyOnly { body }).await
    }

    /// Replaces the body of review comment `comment` (the bot's own reply in a review thread).
    pub async fn update_review_comment(
        &self,
        repo: &RepoName,
        comment: CommentId,
        body: &str,
    ) -> Result<ReviewComment, GithubError> {
        let comment = comment.to_string();
        let endpoint = Endpoint::new(Method::PATCH, repo_path(repo, &["pulls", "comments", &comment]));
        self.json_with(endpoint, &BodyOnly { body }).await
    }

    /// Answers in the thread of review comment `comment` on pull request `pull`.
    pub async fn reply_to_review_comment(
        &self,
        repo: &RepoName,
        pull: IssueNumber,
        comment: CommentId,
        body: &str,
    ) -> Result<ReviewComment, GithubError> {
        let (pull, comment) = (pull.to_string(), comment.to_string());
        let endpoint = Endpoint::new(
            Method::POST,
            repo_path(repo, &["pulls", &pull, "comments", &comment, "replies"]),
        );
        self.json_with(endpoint, &BodyOnly { body }).await
    }

    pub async fn add_issue_comment_reaction(
        &self,
        repo: &RepoName,
        comment: CommentId,
        reaction: Reaction,
    ) -> Result<(), GithubError> {
        let comment = comment.to_string();
        self.react(
            repo_path(repo, &["issues", "comments", &comment, "reactions"]),
            reaction,
        )
        .await
    }

    pub async fn add_review_comment_reaction(
        &self,
        repo: &RepoName,
        comment: CommentId,
        reaction: Reaction,
    ) -> Result<(), GithubError> {
        let comment = comment.to_string();
        self.react(repo_path(repo, &["pulls", "comments", &comment, "reactions"]), reaction)
            .await
    }

    /// Reacts to the issue or pull request itself (its description).
    pub async fn add_issue_reaction(
        &self,
        repo: &RepoName,
        number: IssueNumber,
        reaction: Reaction,
    ) -> Result<(), GithubError> {
        let number = number.to_string();
        self.react(repo_path(repo, &["issues", &number, "reactions"]), reaction)
            .await
    }

    async fn react(&self, segments: Vec<String>, reaction: Reaction) -> Result<(), GithubError> {
        // 200 when the reaction was there already, 201 when new: both are success.
        let _: serde_json::Value = self
            .json_with(
                Endpoint::new(Method::POST, segments),
                &ReactionBody { content: reaction },
            )
            .await?;
        Ok(())
    }

    /// Creates a check run; annotations beyond the first fifty follow in updates.
    pub async fn create_check_run(&self, repo: &RepoName, run: &NewCheckRun) -> Result<CheckRun, GithubError> {
        let batches = run.output.as_ref().map(CheckRunOutput::batches).unwrap_or_default();
        let body = NewCheckRunBody {
            name: &run.name,
            head_sha: run.head_sha.as_str(),
            status: run.status,
            started_at: run.started_at.map(format_rfc3339),
            conclusion: run.conclusion,
            completed_at: run.completed_at.map(format_rfc3339),
            details_url: run.details_url.as_deref(),
            external_id: run.external_id.as_deref(),
            output: run
                .output
                .as_ref()
                .map(|output| output.body(batches.first().copied().unwrap_or_default())),
        };
        let endpoint = Endpoint::new(Method::POST, repo_path(repo, &["check-runs"]));
        let mut created: CheckRun = self.json_with(endpoint, &body).await?;
        if let Some(output) = &run.output {
            for batch in batches.iter().skip(1) {
                created = self.append_annotations(repo, created.id, output, batch).await?;
            }
        }
        Ok(created)
    }

    /// Updates a check run. GitHub takes at most fifty annotations per request: the first fifty go
    /// with the update, the rest in follow-up updates that repeat the output's texts (GitHub appends
    /// annotations across updates).
    pub async fn update_check_run(
        &self,
        repo: &RepoName,
        id: CheckRunId,
        update: &CheckRunUpdate,
    ) -> Result<CheckRun, GithubError> {
        let batches = update.output.as_ref().map(CheckRunOutput::batches).unwrap_or_default();
        let body = CheckRunUpdateBody {
            status: update.status,
            conclusion: update.conclusion,
            completed_at: update.completed_at.map(format_rfc3339),
            details_url: update.details_url.as_deref(),
            output: update
                .output
                .as_ref()
                .map(|output| output.body(batches.first().copied().unwrap_or_default())),
        };
        let mut updated = self.patch_check_run(repo, id, &body).await?;
        if let Some(output) = &update.output {
            for batch in batches.iter().skip(1) {
                updated = self.append_annotations(repo, id, output, batch).await?;
            }
        }
        Ok(updated)
    }

    async fn append_annotations(
        &self,
        repo: &RepoName,
        id: CheckRunId,
        output: &CheckRunOutput,
        batch: &[Annotation],
    ) -> Result<CheckRun, GithubError> {
        let body = CheckRunUpdateBody {
            output: Some(output.body(batch)),
            ..CheckRunUpdateBody::default()
        };
        self.patch_check_run(repo, id, &body).await
    }

    async fn patch_check_run(
        &self,
        repo: &RepoName,
        id: CheckRunId,
        body: &CheckRunUpdateBody<'_>,
    ) -> Result<CheckRun, GithubError> {
        let id = id.to_string();
        let endpoint = Endpoint::new(Method::PATCH, repo_path(repo, &["check-runs", &id]));
        self.json_with(endpoint, body).await
    }

    pub async fn create_review(
        &self,
        repo: &RepoName,
        pull: IssueNumber,
        review: &NewReview,
    ) -> Result<Review, GithubError> {
        let pull = pull.to_string();
        let endpoint = Endpoint::new(Method::POST, repo_path(repo, &["pulls", &pull, "reviews"]));
        self.json_with(endpoint, review).await
    }

    /// The comments of an issue's or pull request's conversation, oldest first (up to
    /// [`limits::ISSUE_COMMENTS`]).
    pub async fn list_issue_comments(
        &self,
        repo: &RepoName,
        number: IssueNumber,
    ) -> Result<Listing<IssueComment>, GithubError> {
        let number = number.to_string();
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["issues", &number, "comments"]));
        self.paged(endpoint, limits::ISSUE_COMMENTS, |page: Vec<IssueComment>| page)
            .await
    }

    /// The review comments on a pull request's diff, oldest first (up to
    /// [`limits::REVIEW_COMMENTS`]).
    pub async fn list_review_comments(
        &self,
        repo: &RepoName,
        pull: IssueNumber,
    ) -> Result<Listing<ReviewComment>, GithubError> {
        let pull = pull.to_string();
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["pulls", &pull, "comments"]));
        self.paged(endpoint, limits::REVIEW_COMMENTS, |page: Vec<ReviewComment>| page)
            .await
    }

    /// The reviews of a pull request, oldest first (up to [`limits::REVIEWS`]).
    pub async fn list_reviews(&self, repo: &RepoName, pull: IssueNumber) -> Result<Listing<Review>, GithubError> {
        let pull = pull.to_string();
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["pulls", &pull, "reviews"]));
        self.paged(endpoint, limits::REVIEWS, |page: Vec<Review>| page).await
    }

    /// Dismisses a review that requested changes, with `message` saying why.
    pub async fn dismiss_review(
        &self,
        repo: &RepoName,
        pull: IssueNumber,
        review: u64,
        message: &str,
    ) -> Result<Review, GithubError> {
        let (pull, review) = (pull.to_string(), review.to_string());
        let endpoint = Endpoint::new(
            Method::PUT,
            repo_path(repo, &["pulls", &pull, "reviews", &review, "dismissals"]),
        );
        self.json_with(
            endpoint,
            &DismissalBody {
                message,
                event: "DISMISS",
            },
        )
        .await
    }

    pub async fn create_pull(&self, repo: &RepoName, pull: &NewPull) -> Result<CreatedPull, GithubError> {
        let endpoint = Endpoint::new(Method::POST, repo_path(repo, &["pulls"]));
        self.json_with(endpoint, pull).await
    }

    /// The open pull requests of the repository, newest first (up to [`limits::OPEN_PULLS`]).
    pub async fn list_open_pulls(&self, repo: &RepoName) -> Result<Vec<PullRequest>, GithubError> {
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["pulls"])).query("state", "open");
        let listing = self
            .paged(endpoint, limits::OPEN_PULLS, |page: Vec<PullRequest>| page)
            .await?;
        Ok(warn_if_truncated(listing, "open pull requests", repo))
    }

    /// The closed pull requests from `branch` of this repository, newest first (one page of 30).
    pub async fn closed_pulls_from(&self, repo: &RepoName, branch: &str) -> Result<Vec<PullRequest>, GithubError> {
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["pulls"]))
            .query("state", "closed")
            .query("head", format!("{}:{branch}", repo.owner()));
        self.json(endpoint, None).await
    }

    /// Changes a pull request's title, body or state (`open`, `closed`); `None` leaves a field.
    pub async fn update_pull(
        &self,
        repo: &RepoName,
        pull: IssueNumber,
        change: &PullUpdate<'_>,
    ) -> Result<PullRequest, GithubError> {
        let pull = pull.to_string();
        let endpoint = Endpoint::new(Method::PATCH, repo_path(repo, &["pulls", &pull]));
        self.json_with(endpoint, change).await
    }

    /// The files the pull request changes, as far as GitHub lists them (3,000 at most): `truncated`
    /// says that there are more, for a report to say how many were not seen.
    pub async fn list_pull_files(&self, repo: &RepoName, pull: IssueNumber) -> Result<Listing<PullFile>, GithubError> {
        let pull = pull.to_string();
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["pulls", &pull, "files"]));
        let listing = self
            .paged(endpoint, limits::PULL_FILES, |page: Vec<PullFile>| page)
            .await?;
        if listing.truncated {
            tracing::warn!(%repo, pull, read = listing.items.len(),
                "the pull request changes more files than GitHub lists; the rest are not seen");
        }
        Ok(listing)
    }

    /// `endpoint`'s items, following the `Link` header page by page to the end of the list or to
    /// `limit`; `items` takes them out of a page's body.
    async fn paged<P: DeserializeOwned, T>(
        &self,
        endpoint: Endpoint,
        limit: PageLimit,
        items: fn(P) -> Vec<T>,
    ) -> Result<Listing<T>, GithubError> {
        paging::read_pages(&self.http, endpoint, limit, |endpoint| async move {
            let reply = self.send(&endpoint, None).await?;
            let page: P = reply.json(&endpoint)?;
            Ok((items(page), reply.headers))
        })
        .await
    }

    /// The repositories this installation can reach (`GET /installation/repositories`, with the
    /// installation's token), up to [`limits::INSTALLATION_REPOSITORIES`]; archived ones left out.
    /// `truncated` says that the installation has more, which the caller must say.
    pub async fn installation_repositories(&self) -> Result<Listing<Repository>, GithubError> {
        let endpoint = Endpoint::new(Method::GET, ["installation", "repositories"]);
        let all = self
            .paged(
                endpoint,
                limits::INSTALLATION_REPOSITORIES,
                |page: InstallationRepositoryPage| page.repositories,
            )
            .await?;
        Ok(Listing {
            items: all
                .items
                .into_iter()
                .filter(|r| !r.archived)
                .map(|r| r.repository)
                .collect(),
            truncated: all.truncated,
        })
    }

    /// Every app's check runs on `git_ref` (a commit, branch or tag), optionally only those named
    /// `check_name`.
    pub async fn list_check_runs_for_ref(
        &self,
        repo: &RepoName,
        git_ref: &str,
        check_name: Option<&str>,
        filter: RunFilter,
    ) -> Result<Vec<CheckRunSummary>, GithubError> {
        let mut endpoint = Endpoint::new(Method::GET, repo_path(repo, &["commits", git_ref, "check-runs"]));
        if let Some(name) = check_name {
            endpoint = endpoint.query("check_name", name);
        }
        let endpoint = endpoint.query("filter", filter.as_str());
        let listing = self
            .paged(endpoint, limits::CHECK_RUNS, |page: CheckRunPage| page.check_runs)
            .await?;
        Ok(warn_if_truncated(listing, "check runs of a ref", repo))
    }

    /// Every app's check suites on `git_ref` (a commit, or a branch for its head).
    pub async fn list_check_suites_for_ref(
        &self,
        repo: &RepoName,
        git_ref: &str,
    ) -> Result<Vec<CheckSuiteSummary>, GithubError> {
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["commits", git_ref, "check-suites"]));
        let listing = self
            .paged(endpoint, limits::CHECK_RUNS, |page: CheckSuitePage| page.check_suites)
            .await?;
        Ok(warn_if_truncated(listing, "check suites of a ref", repo))
    }

    /// The GitHub Actions workflow runs of commit `head_sha`, newest first.
    pub async fn list_workflow_runs_for_sha(
        &self,
        repo: &RepoName,
        head_sha: &str,
    ) -> Result<Vec<WorkflowRunSummary>, GithubError> {
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["actions", "runs"])).query("head_sha", head_sha);
        let listing = self
            .paged(endpoint, limits::WORKFLOW_RUNS, |page: WorkflowRunPage| {
                page.workflow_runs
            })
            .await?;
        Ok(warn_if_truncated(listing, "workflow runs of a commit", repo))
    }

    /// The names of `repo`'s tags in GitHub's order, at most `limit` of them.
    pub async fn list_tags(&self, repo: &RepoName, limit: usize) -> Result<Vec<String>, GithubError> {
        let per_page = limit.clamp(1, 100);
        let pages = PageLimit {
            per_page,
            max_pages: limit.div_ceil(per_page).max(1),
        };
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["tags"]));
        // Reading only the newest `limit` is the point here: a cut list is not a warning.
        let mut names: Vec<String> = self
            .paged(endpoint, pages, |page: Vec<TagName>| {
                page.into_iter().map(|tag| tag.name).collect()
            })
            .await?
            .items;
        names.truncate(limit);
        Ok(names)
    }

    /// The newest completed workflow runs on `branch`, newest first: one page of at most `limit`
    /// (1 to 100), the branch's recent CI history.
    pub async fn recent_workflow_runs(
        &self,
        repo: &RepoName,
        branch: &str,
        limit: u8,
    ) -> Result<Vec<WorkflowRunSummary>, GithubError> {
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["actions", "runs"]))
            .query("branch", branch)
            .query("status", "completed")
            .query("per_page", limit.clamp(1, 100).to_string());
        let page: WorkflowRunPage = self.json(endpoint, None).await?;
        Ok(page.workflow_runs)
    }

    /// The jobs of workflow run `run_id`: of its latest attempt, or of every attempt.
    pub async fn list_jobs_for_run(
        &self,
        repo: &RepoName,
        run_id: u64,
        filter: RunFilter,
    ) -> Result<Vec<ActionsJob>, GithubError> {
        let run = run_id.to_string();
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["actions", "runs", &run, "jobs"]))
            .query("filter", filter.as_str());
        let listing = self
            .paged(endpoint, limits::RUN_JOBS, |page: JobPage| page.jobs)
            .await?;
        Ok(warn_if_truncated(listing, "jobs of a workflow run", repo))
    }

    /// Job `job_id`'s log, at most `max_bytes` of it: when longer, its end (where failures are),
    /// from the start of a line. GitHub answers with a redirect to a short-lived signed URL on its
    /// storage; that URL is fetched without the token (whatever its host) and read as it streams.
    /// Logs that expired or were deleted are [`GithubError::Status`] 410 (or
    /// [`GithubError::NotFound`]).
    pub async fn download_job_log(
        &self,
        repo: &RepoName,
        job_id: u64,
        max_bytes: usize,
    ) -> Result<JobLogText, GithubError> {
        let job = job_id.to_string();
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["actions", "jobs", &job, "logs"]));
        let reply = self.send_with(&endpoint, None, Redirects::Return).await?;
        let mut tail = LogTail::new(max_bytes);
        if !reply.status.is_redirection() {
            // The log itself, read already (not what api.github.com does, but harmless).
            tail.push(&reply.body);
            return Ok(tail.finish());
        }
        let invalid = |message: &str| GithubError::Decode {
            what: endpoint.to_string(),
            message: message.to_owned(),
        };
        let location = reply
            .headers
            .get(LOCATION)
            .and_then(|value| value.to_str().ok())
            .ok_or_else(|| invalid("a redirect without a usable Location header"))?;
        // A relative Location is relative to the request.
        let url = self
            .http
            .url(&endpoint)
            .join(location)
            .map_err(|_| invalid("the redirect's Location is not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid("the redirect's Location is not an http(s) URL"));
        }
        let request = format!("{endpoint} (the signed log URL it redirected to)");
        self.http
            .get_unauthenticated(&url, &request, &mut |chunk| tail.push(chunk))
            .await?;
        Ok(tail.finish())
    }

    /// Re-runs one job of a workflow run (a new attempt of its run).
    pub async fn rerun_job(&self, repo: &RepoName, job_id: u64) -> Result<(), GithubError> {
        let job = job_id.to_string();
        let endpoint = Endpoint::new(Method::POST, repo_path(repo, &["actions", "jobs", &job, "rerun"]));
        self.send(&endpoint, None).await?;
        Ok(())
    }

    /// The pull requests commit `sha` belongs to (for a commit of a pull request's head, that pull
    /// request; for a merged one, the pull request that merged it), open ones first.
    pub async fn pulls_for_commit(&self, repo: &RepoName, sha: &str) -> Result<Vec<CommitPull>, GithubError> {
        let endpoint = Endpoint::new(Method::GET, repo_path(repo, &["commits", sha, "pulls"]));
        let listing = self
            .paged(endpoint, limits::COMMIT_PULLS, |page: Vec<PullSimple>| page)
            .await?;
        let pulls = warn_if_truncated(listing, "pull requests of a commit", repo);
        let mut pulls: Vec<CommitPull> = pulls
            .into_iter()
            .map(|pull| CommitPull {
                number: pull.number,
                open: pull.state == "open",
                head_sha: pull.head.sha,
                base_ref: pull.base.branch,
            })
            .collect();
        pulls.sort_by_key(|pull| !pull.open);
        Ok(pulls)
    }
}

/// The items of a list whose callers work with what there is: a cut list is logged, not reported.
fn warn_if_truncated<T>(listing: Listing<T>, what: &str, repo: &RepoName) -> Vec<T> {
    if listing.truncated {
        tracing::warn!(%repo, list = what, read = listing.items.len(),
            "GitHub has more of this list than pitcrew reads; the rest is left out");
    }
    listing.items
}

/// A contents-API entry's text.
pub(crate) fn decode_file(entry: ContentEntry, what: &str) -> Result<String, GithubError> {
    if entry.kind != "file" {
        return Err(GithubError::NotAFile {
            what: what.to_owned(),
            kind: entry.kind,
        });
    }
    // Files over 1 MB come with `"encoding": "none"` and no content.
    if entry.size > MAX_FILE_SIZE || entry.encoding.as_deref() == Some("none") {
        return Err(GithubError::FileTooLarge {
            what: what.to_owned(),
            size: entry.size,
            limit: MAX_FILE_SIZE,
        });
    }
    let decode_error = |message: String| GithubError::Decode {
        what: what.to_owned(),
        message,
    };
    if entry.encoding.as_deref() != Some("base64") {
        return Err(decode_error(format!("unexpected encoding {:?}", entry.encoding)));
    }
    let bytes = decode_wrapped_base64(entry.content.as_deref().unwrap_or_default())
        .map_err(|err| decode_error(format!("the content is not base64: {err}")))?;
    String::from_utf8(bytes).map_err(|_| decode_error("the file is not UTF-8 text".to_owned()))
}
