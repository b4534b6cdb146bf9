// Package client posts to and reads from a rest.area cluster over its REST
// API, following the client's procedure of docs/contract.md §7 so that callers
// cannot get it wrong:
//
//  1. every post gets a request_id, and the post (its normalised content
//     and the servers it goes to) is written to a journal file and fsynced
//     before the first byte is sent;
//  2. a lost answer, a timeout, 429 or 503 is retried with the same
//     request_id and the same content, moving to the next server when one
//     is unreachable, within a bounded number of attempts and a deadline;
//  3. a 201 or 200 replayed answer is read back (the question by its id, a
//     reply by paging its question's replies) before the post is called
//     confirmed;
//  4. anything short of that is reported as unconfirmed, with the reason,
//     and stays in the journal for Client.Resume.
//
// Post never returns a silent success: its Result has one of the outcomes
// confirmed, unconfirmed, conflict, deleted or rejected.
package client
