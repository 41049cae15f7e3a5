"""Reviews: `pulls/list-reviews`, `pulls/create-review`, `pulls/get-review`,
`pulls/submit-review`, `pulls/dismiss-review`, and requested reviewers."""
from ..schemas import body as bodies
from ..schemas import queries, reviews
from . import request


class Reviews:
    """`GET|POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        backend = request.backend_of(req)
        found = backend.reviews.list(backend.repos.find(owner, repo), request.number(pull_number),
                                     queries.page(request.pairs(req)))
        request.answer(resp, 200, found.items)

    def on_post(self, req, resp, owner, repo, pull_number):
        backend, record, sent = request.write(req, owner, repo)
        given = reviews.create(bodies.json_object(sent))
        review = backend.reviews.create(record, request.number(pull_number), **given)
        request.wrote(req, resp, 200, review, pullNumber=pull_number, reviewId=str(review["id"]))


class Review:
    """`GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}`."""

    def on_get(self, req, resp, owner, repo, pull_number, review_id):
        backend = request.backend_of(req)
        request.answer(resp, 200, backend.reviews.get(
            backend.repos.find(owner, repo), request.number(pull_number),
            request.number(review_id)))


class ReviewEvents:
    """`POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/events`."""

    def on_post(self, req, resp, owner, repo, pull_number, review_id):
        backend, record, sent = request.write(req, owner, repo)
        given = reviews.submit(bodies.json_object(sent))
        review = backend.reviews.submit(record, request.number(pull_number),
                                        request.number(review_id), **given)
        request.wrote(req, resp, 200, review, pullNumber=pull_number, reviewId=review_id)


class ReviewDismissals:
    """`PUT /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals`."""

    def on_put(self, req, resp, owner, repo, pull_number, review_id):
        backend, record, given = request.existing(req, owner, repo, lambda rules, record: (
            rules.reviews.find(record, request.number(pull_number), request.number(review_id))))
        review = backend.reviews.dismiss(record, request.number(pull_number),
                                         request.number(review_id), reviews.dismissal(given))
        request.wrote(req, resp, 200, review, pullNumber=pull_number, reviewId=review_id)


class RequestedReviewers:
    """`GET|POST|DELETE /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers`."""

    def on_get(self, req, resp, owner, repo, pull_number):
        request.read(req, resp, owner, repo,
                     lambda rules: rules.reviews.requested, request.number(pull_number))

    def on_post(self, req, resp, owner, repo, pull_number):
        request.members(req, resp, owner, repo, pull_number, reviews.reviewers,
                        lambda rules: rules.reviews.request, 201, pullNumber=pull_number)

    def on_delete(self, req, resp, owner, repo, pull_number):
        request.members(req, resp, owner, repo, pull_number, reviews.reviewers,
                        lambda rules: rules.reviews.unrequest, 200, pullNumber=pull_number)
